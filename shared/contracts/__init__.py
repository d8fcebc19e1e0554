"""Every message Aurora puts on the wire, as frozen typed models, in one place."""
