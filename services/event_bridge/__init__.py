"""The event-bridge: raw signals in, validated AMP events out."""
