#!/usr/bin/python3
"""The "user" of tools/testenv --wayland: answers xdg-desktop-portal-gnome's Screen Share dialog.

The dialog is the real one (GTK 4, shown on mutter's output); this presses the keys a person
would, through mutter's own input API (org.gnome.Mutter.RemoteDesktop, a virtual keyboard):
Tab (focus moves from "Remember this selection" to the only monitor, which selects it), then
Alt+S (the Share button's mnemonic). It watches the session bus for the backend's
org.freedesktop.impl.portal.ScreenCast.Start call (eavesdropping, which testenv's bus allows)
and repeats the keys every second until that call is answered, since the dialog maps a moment
after the call arrives. Each answered Start appends one line "approved N" to --log FILE, so a
test can tell whether a dialog was shown at all (a restore token that works shows none).
Prints "ready" once its keyboard is live. Environment: DBUS_SESSION_BUS_ADDRESS.
"""
import argparse
import signal
import sys
import time

import dbus
import dbus.mainloop.glib
from gi.repository import GLib

MUTTER_RD = "org.gnome.Mutter.RemoteDesktop"
MUTTER_SC = "org.gnome.Mutter.ScreenCast"
KEYSYMS = {"Tab": 0xFF09, "Alt": 0xFFE9, "s": 0x73, "Shift": 0xFFE1}
ATTEMPT_INTERVAL_MS = 1000
MAX_ATTEMPTS = 30


class Approver:
    def __init__(self, bus, log):
        self.bus = bus
        self.log = log
        self.pending = {}  # serial of a Start call -> attempts made
        self.approved = 0
        self.connect()

    def connect(self):
        """A remote desktop session with its keyboard. mutter closes it (with the monitor stream
        beside it) whenever the monitor configuration changes (a rotated output), so it is made
        again when a key press finds it gone."""
        bus = self.bus
        remote = dbus.Interface(bus.get_object(MUTTER_RD, "/org/gnome/Mutter/RemoteDesktop"), MUTTER_RD)
        path = remote.CreateSession()
        session_object = bus.get_object(MUTTER_RD, path)
        self.keyboard = dbus.Interface(session_object, MUTTER_RD + ".Session")
        session_id = session_object.Get(MUTTER_RD + ".Session", "SessionId",
                                        dbus_interface=dbus.PROPERTIES_IFACE)
        # mutter 43 starts a remote desktop session only with a screen cast session beside it.
        cast = dbus.Interface(bus.get_object(MUTTER_SC, "/org/gnome/Mutter/ScreenCast"), MUTTER_SC)
        cast_path = cast.CreateSession({"remote-desktop-session-id": session_id})
        dbus.Interface(bus.get_object(MUTTER_SC, cast_path), MUTTER_SC + ".Session").RecordMonitor(
            "", {"cursor-mode": dbus.UInt32(0)})
        self.keyboard.Start()
        self.press_keys("Shift")  # the first event of a new virtual keyboard is lost

    def press(self, chord):
        """Presses CHORD; False when mutter has no keyboard for us right now (the next attempt tries again)."""
        try:
            if self.keyboard is None:
                self.connect()
            self.press_keys(chord)
            return True
        except dbus.exceptions.DBusException as error:
            # Gone with a monitor change or a PipeWire restart; while PipeWire is down mutter cannot
            # make a new one ("Couldn't connect pipewire context").
            print("remote desktop session unusable (%s: %s); trying again" % (error.get_dbus_name(), error),
                  flush=True)
            self.keyboard = None
            return False

    def press_keys(self, chord):
        keys = [KEYSYMS[key] for key in chord.split("+")]
        for key in keys:
            self.keyboard.NotifyKeyboardKeysym(dbus.UInt32(key), True)
        for key in reversed(keys):
            self.keyboard.NotifyKeyboardKeysym(dbus.UInt32(key), False)

    def filter(self, _bus, message):
        if (message.get_type() == 1 and message.get_interface() == "org.freedesktop.impl.portal.ScreenCast"
                and message.get_member() == "Start"):
            serial = message.get_serial()
            self.pending[serial] = 0
            GLib.timeout_add(ATTEMPT_INTERVAL_MS // 2, self.attempt, serial)
        elif message.get_type() in (2, 3) and message.get_reply_serial() in self.pending:
            del self.pending[message.get_reply_serial()]
            self.approved += 1
            with open(self.log, "a") as f:
                f.write("%s %d\n" % ("approved" if message.get_type() == 2 else "error", self.approved))
        return None

    def attempt(self, serial):
        if serial not in self.pending or self.pending[serial] >= MAX_ATTEMPTS:
            self.pending.pop(serial, None)
            return False
        self.pending[serial] += 1
        if self.press("Tab"):
            time.sleep(0.2)
            self.press("Alt+s")
        return True


def main():
    parser = argparse.ArgumentParser(description="answers the GNOME portal's Screen Share dialog")
    parser.add_argument("--log", required=True)
    options = parser.parse_args()
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.SessionBus()
    approver = Approver(bus, options.log)
    for rule in ("type='method_call',interface='org.freedesktop.impl.portal.ScreenCast',member='Start',"
                 "eavesdrop='true'", "type='method_return',eavesdrop='true'", "type='error',eavesdrop='true'"):
        bus.add_match_string(rule)
    bus.add_message_filter(approver.filter)
    loop = GLib.MainLoop()
    GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGTERM, loop.quit)
    GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGINT, loop.quit)
    open(options.log, "a").close()
    print("ready", flush=True)
    loop.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
