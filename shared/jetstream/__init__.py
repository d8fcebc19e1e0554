"""JetStream's stores: the streams and buckets Aurora creates, dead letters and their advisories,
and the run records and run events kept there."""
