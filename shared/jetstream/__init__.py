"""JetStream's stores and consuming them: the streams and buckets Aurora creates, the one consumer
loop and the consumers' names, KV watches and mirrors, dead letters and their advisories, and the
run records and run events kept there."""
