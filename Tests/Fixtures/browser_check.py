#!/usr/bin/env python3
"""Drives headless Chromium (Debian's chromium) over the DevTools protocol on a pipe
(--remote-debugging-pipe: fd 3 in, fd 4 out, NUL-separated JSON), Python standard library only.

  browser_check.py dashboard URL OUT.png   open LivePush's dashboard during a push: charts grow,
                                           the picture changes, the Pause button pauses, a wrong
                                           token is refused; a screenshot to OUT.png
  browser_check.py report FILE.html OUT.png   open a session report: its canvases drawn, its
                                           numbers (every [data-key] cell); a screenshot
  browser_check.py attack DASHBOARD_URL ATTACKER_URL OUT.png   the dashboard open in one tab, a
                                           page of another port in the same browser tries to steer
                                           it (window.attack), then the dashboard under another
                                           host name (attacker.example, resolved to 127.0.0.1 as
                                           DNS rebinding would); a screenshot of the victim's tab
  browser_check.py record URL OUT.png      the dashboard of a run that records: the recording's
                                           buttons shown, Pause, Resume and Stop clicked in turn and
                                           each seen in the status; a screenshot while paused
  browser_check.py settings URL OUT.png    the dashboard at 1366 x 768: Mirror stream, Noise
                                           suppression, Auto gain, the mic's volume and Restart
                                           used as a person would, each seen in the status; whether
                                           the page fits across; a screenshot
  browser_check.py fit URL WIDTH HEIGHT OUT.png   the dashboard in a WIDTH x HEIGHT window once a
                                           destination row is shown: whether the page and the
                                           destinations table fit across; a screenshot

Prints one JSON object with what it saw; exit status 0 unless the browser could not be driven.
"""
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request


class Browser:
    def __init__(self, width=1400, height=1000, extra_arguments=()):
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()
        self.profile = tempfile.mkdtemp(prefix="lp-chromium-")

        def plumbing():
            # Copies first (the pipe's own numbers may be 3 or 4), then into place, inheritable.
            read_end, write_end = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)

        self.process = subprocess.Popen(
            ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             "--no-first-run", "--user-data-dir=" + self.profile, f"--window-size={width},{height}",
             *extra_arguments, "about:blank"],
            preexec_fn=plumbing, close_fds=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.next_id = 0
        self.answers = {}
        self.condition = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        self.session = None

    def _read(self):
        buffer = b""
        while True:
            chunk = os.read(self.from_chrome, 1 << 16)
            if not chunk:
                return
            buffer += chunk
            while b"\0" in buffer:
                message, buffer = buffer.split(b"\0", 1)
                data = json.loads(message)
                if "id" in data:
                    with self.condition:
                        self.answers[data["id"]] = data
                        self.condition.notify_all()

    def call(self, method, params=None, session=True, timeout=30):
        with self.condition:
            self.next_id += 1
            ident = self.next_id
        message = {"id": ident, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self.to_chrome, json.dumps(message).encode() + b"\0")
        deadline = time.time() + timeout
        with self.condition:
            while ident not in self.answers:
                if not self.condition.wait(timeout=max(0, deadline - time.time())):
                    raise RuntimeError(f"no answer to {method}")
            answer = self.answers.pop(ident)
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer["result"]

    def open(self, url):
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True}, session=False)["sessionId"]
        self.call("Page.enable")
        self.call("Page.navigate", {"url": url})

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            return None
        return result["result"].get("value")

    def wait_for(self, expression, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.evaluate(expression):
                return True
            time.sleep(0.2)
        return False

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        with open(path, "wb") as file:
            file.write(base64.b64decode(data))

    def close(self):
        try:
            self.call("Browser.close", session=False, timeout=5)
        except Exception:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


# How many pixels of each canvas are drawn (not transparent): an empty chart has none.
CANVASES = """Array.from(document.querySelectorAll('canvas')).map(c => {
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++;
  return {id: c.id, drawn: n, size: c.width * c.height};
})"""

# The preview picture shrunk to 16x9 grey levels: compared between two moments.
PREVIEW = """(() => { const img = document.getElementById('preview');
  if (!img.complete || !img.naturalWidth) return null;
  const c = document.createElement('canvas'); c.width = 16; c.height = 9;
  const g = c.getContext('2d'); g.drawImage(img, 0, 0, 16, 9);
  const d = g.getImageData(0, 0, 16, 9).data; const out = [];
  for (let i = 0; i < d.length; i += 4) out.push(Math.round((d[i] + d[i + 1] + d[i + 2]) / 3));
  return out; })()"""


def preview_pixels(browser, seconds=5):
    """The preview image's 16x9 grey pixels; the page reloads the image now and then, so a
    sample taken while it loads is taken again (None only when no load completed in `seconds`)."""
    deadline = time.time() + seconds
    while True:
        pixels = browser.evaluate(PREVIEW)
        if pixels is not None or time.time() > deadline:
            return pixels
        time.sleep(0.05)


def dashboard(url, screenshot):
    report = {}
    wrong = url.split("token=")[0] + "token=0123456789abcdef0123456789abcdef"
    try:
        urllib.request.urlopen(wrong, timeout=5)
        report["wrongTokenStatus"] = 200
    except urllib.error.HTTPError as error:
        report["wrongTokenStatus"] = error.code
    browser = Browser()
    try:
        browser.open(wrong)
        browser.wait_for("document.readyState === 'complete'", 10)
        report["wrongTokenText"] = browser.evaluate("document.body.innerText")
        browser.open(url)
        report["loaded"] = browser.wait_for(
            "window.livepushDashboard && livepushDashboard.points >= 2 && livepushDashboard.previewLoads >= 1", 20)
        report["points1"] = browser.evaluate("livepushDashboard.points")
        report["datasetPoints1"] = browser.evaluate(
            "livepushDashboard.charts['chart-bitrate'].data.datasets[0].data.length")
        preview1 = preview_pixels(browser)
        time.sleep(3)
        report["points2"] = browser.evaluate("livepushDashboard.points")
        report["datasetPoints2"] = browser.evaluate(
            "livepushDashboard.charts['chart-bitrate'].data.datasets[0].data.length")
        preview2 = preview_pixels(browser)
        report["previewSeen"] = preview1 is not None and preview2 is not None
        report["previewDifference"] = (sum(abs(a - b) for a, b in zip(preview1, preview2))
                                       if report["previewSeen"] else 0)
        report["canvases"] = browser.evaluate(CANVASES)
        browser.evaluate("document.getElementById('pause').click()")
        report["pausedInStatus"] = browser.wait_for(
            "livepushDashboard.lastStatus && livepushDashboard.lastStatus.paused === true", 10)
        report["answer"] = browser.evaluate("livepushDashboard.lastAnswer")
        report["pausedAtMonotonicS"] = time.monotonic()
        time.sleep(3)
        report["stateText"] = browser.evaluate("document.getElementById('state').textContent")
        browser.screenshot(screenshot)
    finally:
        browser.close()
    return report


FIT = """(() => {
  const view = document.documentElement.clientWidth;
  const section = document.querySelector('.picture');
  const table = document.getElementById('destinations');
  const cells = [...table.querySelectorAll('th, td')].map((c) => c.getBoundingClientRect().right);
  const sectionRight = section.getBoundingClientRect().right;
  return { viewportWidth: view, pageScrollWidth: document.documentElement.scrollWidth,
           sectionScrollWidth: section.scrollWidth, sectionClientWidth: section.clientWidth,
           tableWidth: Math.round(table.getBoundingClientRect().width), cells: cells.length,
           rows: table.querySelectorAll('tbody tr').length,
           cutCells: cells.filter((right) => right > sectionRight + 0.5 || right > view + 0.5).length,
           chartsRight: Math.round(document.getElementById('charts').getBoundingClientRect().right) };
})()"""


def fit(url, width, height, screenshot):
    """The dashboard at WIDTH x HEIGHT once a destination row is shown: whether the page, the picture
    section and the destinations table fit across (no horizontal scrolling, no cell cut off)."""
    browser = Browser(width, height)
    try:
        browser.open(url)
        loaded = browser.wait_for(
            "window.livepushDashboard && document.querySelectorAll('#destinations tbody tr').length >= 1", 20)
        result = browser.evaluate(FIT)
        result["loaded"] = loaded
        browser.screenshot(screenshot)
    finally:
        browser.close()
    return result


def report_page(path, screenshot):
    browser = Browser(1300, 1800)
    result = {}
    try:
        browser.open("file://" + os.path.abspath(path))
        result["ready"] = browser.wait_for("window.livepushReport && livepushReport.ready === true", 20)
        result["canvases"] = browser.evaluate(CANVASES)
        result["numbers"] = browser.evaluate(
            "Object.fromEntries(Array.from(document.querySelectorAll('[data-key]')).map(e => [e.dataset.key, e.textContent]))")
        result["timelineItems"] = browser.evaluate("document.querySelectorAll('#timeline li').length")
        result["timelineWarnings"] = browser.evaluate("document.querySelectorAll('#timeline li.warning').length")
        result["timelineErrors"] = browser.evaluate("document.querySelectorAll('#timeline li.error').length")
        result["scripts"] = browser.evaluate("Array.from(document.scripts).filter(s => s.src).length")
        # Hostile events (issue 30): any script of theirs sets window.lpPwned; image errors fire
        # after the load, so look again a moment later.
        time.sleep(1.5)
        result["pwned"] = browser.evaluate("window.lpPwned === undefined ? null : String(window.lpPwned)")
        result["title"] = browser.evaluate("document.title")
        result["subtitle"] = browser.evaluate("document.querySelector('p') && document.querySelector('p').textContent")
        result["timelineTexts"] = browser.evaluate("Array.from(document.querySelectorAll('#timeline li')).map(e => e.textContent)")
        result["timelineClasses"] = browser.evaluate("Array.from(document.querySelectorAll('#timeline li')).map(e => e.className)")
        result["destinationTexts"] = browser.evaluate(
            "Array.from(document.querySelectorAll('#destinations tbody tr td:first-child')).map(e => e.textContent)")
        result["elements"] = browser.evaluate("document.querySelectorAll('img, svg, iframe, object, embed').length")
        browser.screenshot(screenshot)
    finally:
        browser.close()
    return result


def attack(dashboard_url, attacker_url, screenshot):
    """The victim has its dashboard open; a page of another local server, in the same browser,
    tries to use it; then the dashboard is asked for under another host name."""
    browser = Browser(extra_arguments=["--host-resolver-rules=MAP attacker.example 127.0.0.1"])
    report = {}
    try:
        browser.open(dashboard_url)
        report["victimLoaded"] = browser.wait_for("window.livepushDashboard && livepushDashboard.points >= 1", 20)
        report["victimCookie"] = browser.evaluate("document.cookie")
        victim = browser.session
        browser.open(attacker_url)
        report["attackDone"] = browser.wait_for("window.attackDone === true", 30)
        report["attack"] = browser.evaluate("window.attack")
        rebound = dashboard_url.replace("//127.0.0.1:", "//attacker.example:", 1)
        browser.open(rebound)
        browser.wait_for("document.readyState === 'complete'", 10)
        time.sleep(1)
        report["reboundText"] = browser.evaluate("document.body ? document.body.innerText : ''")
        report["reboundDashboard"] = browser.evaluate("window.livepushDashboard !== undefined")
        token = dashboard_url.split("token=")[1]
        report["reboundPause"] = browser.evaluate(
            "fetch('/api/control?command=pause&token=" + token + "', {method: 'POST', headers: {'X-LivePush-Token': '"
            + token + "'}}).then(r => r.status).catch(e => 'error ' + e)")
        browser.session = victim
        report["victimStillWorks"] = browser.wait_for(
            "livepushDashboard.lastStatus && livepushDashboard.lastStatus.pushing === true", 10)
        browser.screenshot(screenshot)
    finally:
        browser.close()
    return report


def record(url, screenshot):
    """The recording's buttons: shown while a file is recorded, each one seen in the status."""
    report = {}
    browser = Browser()
    status = "livepushDashboard.lastStatus"
    try:
        browser.open(url)
        report["recordingShown"] = browser.wait_for(
            f"window.livepushDashboard && {status} && {status}.recordingPath !== null"
            " && !document.getElementById('recording-controls').hidden", 20)
        browser.evaluate("document.getElementById('record-pause').click()")
        report["pausedInStatus"] = browser.wait_for(f"{status}.recordingPaused === true", 10)
        time.sleep(1.5)  # the status line is redrawn each second
        report["stateWhilePaused"] = browser.evaluate("document.getElementById('state').textContent")
        browser.screenshot(screenshot)
        browser.evaluate("document.getElementById('record-resume').click()")
        report["resumedInStatus"] = browser.wait_for(f"{status}.recordingPaused === false", 10)
        first = browser.evaluate(f"{status}.recordingPath")
        browser.evaluate("document.getElementById('record-split').click()")
        report["splitInStatus"] = browser.wait_for(
            f"{status}.recordingPath !== null && {status}.recordingPath !== {json.dumps(first)}", 15)
        report["splitPath"] = browser.evaluate(f"{status}.recordingPath")
        browser.evaluate("document.getElementById('record-stop').click()")
        report["stoppedInStatus"] = browser.wait_for(
            f"{status}.recordingPath === null && document.getElementById('recording-controls').hidden", 10)
        report["lastAnswer"] = browser.evaluate("livepushDashboard.lastAnswer")
    finally:
        browser.close()
    return report


def replay(url, screenshot):
    """Save replay: shown with a replay buffer, it saves to the run's own name; a path the page
    chooses itself is refused."""
    report = {}
    browser = Browser()
    status = "livepushDashboard.lastStatus"
    try:
        browser.open(url)
        report["buttonShown"] = browser.wait_for(
            f"window.livepushDashboard && {status} && {status}.replayBufferSeconds > 0"
            " && !document.getElementById('replay-save').hidden", 20)
        browser.evaluate("document.getElementById('replay-save').click()")
        report["answered"] = browser.wait_for("livepushDashboard.lastAnswer !== null", 10)
        answer = browser.evaluate("livepushDashboard.lastAnswer") or {}
        report["ok"] = answer.get("ok")
        report["saving"] = (answer.get("result") or {}).get("replaySaving")
        browser.screenshot(screenshot)
        # The page's own fetch, with the token the page holds, naming a file: refused.
        report["pathRefusal"] = browser.evaluate(
            "fetch('api/control?command=replay&args=' + encodeURIComponent('save,/tmp/chosen-by-page.mkv'),"
            " { method: 'POST', ...withToken }).then((r) => r.json()).then((a) => JSON.stringify(a))")
    finally:
        browser.close()
    return report


def settings(url, screenshot):
    """The settings' controls at 1366 x 768, each change seen in the broadcast's status."""
    report = {}
    browser = Browser(1366, 768)
    status = "livepushDashboard.lastStatus"
    change = "(id, value) => { const e = document.getElementById(id); e.value = value; e.dispatchEvent(new Event('change')); }"
    try:
        browser.open(url)
        report["loaded"] = browser.wait_for(f"window.livepushDashboard && {status} && {status}.settings !== undefined", 20)
        report["mirrorUnchecked"] = browser.evaluate("document.getElementById('push-mirror').checked === false")
        browser.evaluate("document.getElementById('push-mirror').click()")
        report["pushMirrorInStatus"] = browser.wait_for(f"{status}.settings.pushMirror === true", 10)
        browser.evaluate(f"({change})('denoise', 'high')")
        report["denoiseInStatus"] = browser.wait_for(f"{status}.settings.denoise === 'high'", 10)
        browser.evaluate("document.getElementById('agc').click()")
        report["agcInStatus"] = browser.wait_for(f"{status}.settings.agc === true", 10)
        browser.evaluate(f"({change})('mic-volume', '60')")
        report["micVolumeInStatus"] = browser.wait_for(f"{status}.volumePercent.mic === 60", 10)
        browser.evaluate("document.getElementById('restart').click()")
        report["restartAnswered"] = browser.wait_for(
            "livepushDashboard.lastAnswer && livepushDashboard.lastAnswer.command === 'restart'", 10)
        report["restartAnswer"] = browser.evaluate("livepushDashboard.lastAnswer")
        time.sleep(1.5)  # the controls are redrawn from the status each second
        report["controlsShowStatus"] = browser.evaluate(
            "document.getElementById('push-mirror').checked && document.getElementById('agc').checked"
            " && document.getElementById('denoise').value === 'high'")
        report["fits"] = browser.evaluate(
            "document.documentElement.scrollWidth <= window.innerWidth"
            " && document.getElementById('settings').getBoundingClientRect().right <= window.innerWidth")
        browser.screenshot(screenshot)
    finally:
        browser.close()
    return report


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "fit":
        print(json.dumps(fit(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])))
    elif mode == "settings":
        print(json.dumps(settings(sys.argv[2], sys.argv[3])))
    elif mode == "replay":
        print(json.dumps(replay(sys.argv[2], sys.argv[3])))
    elif mode == "record":
        print(json.dumps(record(sys.argv[2], sys.argv[3])))
    elif mode == "attack":
        print(json.dumps(attack(sys.argv[2], sys.argv[3], sys.argv[4])))
    else:
        target, out = sys.argv[2:4]
        print(json.dumps(dashboard(target, out) if mode == "dashboard" else report_page(target, out)))
