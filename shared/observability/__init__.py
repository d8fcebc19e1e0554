"""What a service says of itself: structured logs, trace context and spans, metrics, memory."""
