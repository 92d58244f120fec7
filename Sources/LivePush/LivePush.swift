// The LivePush SDK: configuration, the pusher, its observer.
