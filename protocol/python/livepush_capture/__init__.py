"""livepush_capture: the helper side of Capture Link 1.0 in pure Python (standard library only).

The same API shape as the C library liblivepush-capture (protocol/livepush_capture_helper.h):

    import livepush_capture as lpc
    helper = lpc.connect(None, name='my-helper', max_size=(640, 360))   # group from $LIVEPUSH_CAPTURE_GROUP
    try:
        while True:
            helper.wait_frame()                  # paces at CONFIG's fps; answers STOP, RELEASE...
            slot = helper.acquire()              # None: no free slot, the frame is dropped and counted
            if slot is not None:
                slot.data[...] = pixels          # plane p at slot.frame.plane_offset[p], stride[p]
                helper.submit(slot)
    except lpc.SessionEnded as end:              # STOP, the pusher gone, hung, or broke a rule
        print(end, file=sys.stderr)
        sys.exit(end.exit_status)                # 0 after STOP or a planned finish (SPEC §12.7)

Failures raise lpc.Error (lpc.SessionEnded when the session is over) with .status, the
library's status code (LPC_STOPPED -1360 ... LPC_FINISHED -1371, as in C) and a message.
"""
from ._session import (  # noqa: F401
    Error, SessionEnded, Frame, Slot, Helper, connect, frame_layout, now_ns,
)
from ._wire import *  # noqa: F401,F403  (constants: formats, capabilities, codes, statuses)
