/// Tests measure what a receiver got with ReceivedMedia (FLV tags, decoded pictures).
@_exported import ReceivedMedia
