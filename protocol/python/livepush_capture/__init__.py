"""livepush_capture: the helper side of Capture Link 1.0 in pure Python (standard library only).

The same API shape as the C library liblivepush-capture (protocol/livepush_capture_helper.h):

    import livepush_capture as lpc
    try:                                         # --group NAME, else $LIVEPUSH_CAPTURE_GROUP, else default
        helper = lpc.connect(lpc.group_from_args(), name='my-helper', max_size=(640, 360))
    except lpc.Error as error:                   # lpc.ConnectError: no pusher listens on the group
        sys.exit('my-helper: %s' % error)
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

Failures raise lpc.Error (lpc.ConnectError when no pusher listens, lpc.SessionEnded when the
session is over) with .status, the library's status code (LPC_STOPPED -1360 ... LPC_FINISHED
-1371, as in C) and a message.
"""
from ._session import (  # noqa: F401
    Error, ConnectError, SessionEnded, Frame, Slot, Helper, connect, frame_layout, group_from_args, now_ns,
)
from ._wire import *  # noqa: F401,F403  (constants: formats, capabilities, codes, statuses)
