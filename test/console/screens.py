"""Screenshots of the console compared by a test.

The console is drawn from fixed answers (screens/*.json: a cluster of three brokers, first all answering, then with
b3 down) by a small server that serves the page's own files, so that every pixel is the same from run to run. Each
state's full-page screenshot, taken at 1,280 px, is compared with its reference (screens/*.png), and the two states
with each other:

- a state's screenshot is 1,280 px wide (a page wider than its window would be captured wider), no table is wider
  than its section (which would scroll it out of the screenshot's sight), and it differs from its reference in at
  most 25 pixels (a changed digit changes more);
- the page's text in each state is its reference text (screens/*.txt) exactly, so that a changed figure or word fails
  even where a renderer draws it a pixel differently;
- with b3 down, the part of the page above the brokers table is pixel for pixel the one with all brokers up, and the
  page is no taller than the all-up page plus one line per broker (a long error neither widens nor stretches it).

The answers must keep the broker's shape: every key they use must be one a live broker answered in the same test
(`check_shapes`), so that a changed API fails here rather than leaving the references drawn from a stale one.

MOONMQ_CONSOLE_UPDATE_SCREENS=1 writes the references instead of comparing (look at them before committing).
"""
import base64
import io
import json
import os
import re
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from PIL import Image, ImageChops

HERE = os.path.dirname(os.path.abspath(__file__))
SCREENS = os.path.join(HERE, "screens")
ASSETS = os.path.join(HERE, "..", "..", "daemon", "console")
ENDPOINTS = ["/v1/brokers", "/v1/reassignments", "/v1/autobalancer", "/v1/cluster", "/v1/groups?scope=cluster",
             "/v1/topics", "/v1/partitions"]
WIDTH = 1280
# A pixel differs when one of its channels is off by more than this; a screenshot may differ in this many pixels
# (this machine's Chromium draws the same page identically; one changed digit moves 30 or more).
CHANNEL_TOLERANCE = 24
MAX_DIFFERING_PIXELS = 25


def key_paths(value, prefix=""):
    """The keys a JSON answer uses, as paths ("brokers[].id"); a broker id used as a key reads "<broker>"."""
    paths = set()
    if isinstance(value, dict):
        for k, v in value.items():
            name = "<broker>" if re.fullmatch(r"b\d+", k) else k
            path = f"{prefix}.{name}" if prefix else name
            paths.add(path)
            paths |= key_paths(v, path)
    elif isinstance(value, list):
        for v in value:
            paths |= key_paths(v, prefix + "[]")
    return paths


# Keys the live brokers of the test never reach a state to answer, with where the broker writes them.
NOT_REACHED_LIVE = {
    "/v1/brokers": {"brokers[].drain"} | {"brokers[].drain." + k for k in (
        "broker", "draining", "done", "partitions_left", "bytes_left", "moving", "eta_seconds", "blocked",
        "blocked[].topic", "blocked[].partition", "blocked[].reason")},  # daemon/drain_api.cpp, while draining
    "/v1/autobalancer": {"plan[]." + k for k in ("type", "topic", "partition", "src", "dest",
                                                           "swap_topic", "swap_partition", "chosen_by")},
    # daemon/balancer_api.cpp, when a pass plans actions (the live test's brokers are balanced as far as can be)
    "/v1/partitions": {"partitions[].conflict", "strays[].topic", "strays[].partition", "strays[].broker",
                       "strays[].size_bytes"},  # daemon/cluster_api.cpp, a partition served twice or a stray log
}


def check_shapes(live_answers):
    """Fails when a fixture uses a key no live broker answered. `live_answers`: a list of {endpoint: answer}."""
    for name in ("all-up", "b3-down"):
        fixture = load_fixture(name)
        for endpoint in ENDPOINTS:
            live = set(NOT_REACHED_LIVE.get(endpoint, ()))
            for answers in live_answers:
                live |= key_paths(answers[endpoint])
            unknown = sorted(key_paths(fixture[endpoint]) - live)
            assert not unknown, (f"screens/{name}.json {endpoint} uses keys no live broker answered: {unknown} "
                                 f"(the API changed: update the fixture and its reference screenshot)")


def load_fixture(name):
    with open(os.path.join(SCREENS, name + ".json")) as f:
        return json.load(f)


class FixtureServer:
    """Serves the console's files and the current state's answers; counts the answers served per state."""

    def __init__(self):
        self.state = "all-up"
        self.fixtures = {name: load_fixture(name) for name in ("all-up", "b3-down")}
        self.served = {name: 0 for name in self.fixtures}
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                files = {"/ui": ("index.html", "text/html"), "/ui/console.js": ("console.js", "text/javascript"),
                         "/ui/console.css": ("console.css", "text/css")}
                if self.path in files:
                    name, kind = files[self.path]
                    with open(os.path.join(ASSETS, name), "rb") as f:
                        body = f.read()
                elif self.path in ENDPOINTS:
                    state = server.state
                    body = json.dumps(server.fixtures[state][self.path]).encode()
                    kind = "application/json"
                    if self.path == "/v1/brokers":
                        server.served[state] += 1
                else:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def capture(driver):
    """The whole page as an image, however wide or tall it is drawn."""
    size = driver.execute_script("return [document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
    shot = driver.execute_cdp_cmd("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": 0, "width": size[0], "height": size[1], "scale": 1}})
    return Image.open(io.BytesIO(base64.b64decode(shot["data"]))).convert("RGB")


def differing_pixels(a, b):
    diff = ImageChops.difference(a, b)
    channels = diff.split()
    mask = None
    for c in channels:
        over = c.point(lambda v: 255 if v > CHANNEL_TOLERANCE else 0)
        mask = over if mask is None else ImageChops.lighter(mask, over)
    return sum(1 for v in mask.getdata() if v), diff


def compare_with_reference(name, image, text, out_dir):
    reference_path = os.path.join(SCREENS, name + ".png")
    text_path = os.path.join(SCREENS, name + ".txt")
    if os.environ.get("MOONMQ_CONSOLE_UPDATE_SCREENS") == "1":
        image.save(reference_path)
        with open(text_path, "w") as f:
            f.write(text)
        print(f"console screens: wrote {reference_path} and {text_path}")
        return
    with open(text_path) as f:
        expected = f.read()
    if text != expected:
        with open(os.path.join(out_dir, name + ".txt"), "w") as f:
            f.write(text)
        raise AssertionError(f"{name}: the page's text is not its reference's ({text_path}); this run's is in {out_dir}")
    reference = Image.open(reference_path).convert("RGB")
    image.save(os.path.join(out_dir, name + ".png"))
    assert image.size == reference.size, (f"{name}: the page is {image.size[0]}x{image.size[1]} px, its reference "
                                          f"{reference.size[0]}x{reference.size[1]} (this run's in {out_dir})")
    count, diff = differing_pixels(image, reference)
    if count > MAX_DIFFERING_PIXELS:
        diff.point(lambda v: 255 if v > CHANNEL_TOLERANCE else 0).save(os.path.join(out_dir, name + "-diff.png"))
        raise AssertionError(f"{name}: {count} pixels differ from the reference; this run's screenshot and the "
                             f"difference are in {out_dir}")
    print(f"console screens: {name} matches its reference ({count} pixels differ) and its text")


def wait_for(what, check, timeout=30):
    """check() until it gives a true value (returned), its exceptions taken as "not yet"; fails after `timeout` s."""
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            value = check()
            if value:
                return value
        except Exception as e:  # an element redrawn while it was read
            last = e
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what} (last error: {last})")


def tables_fit(driver, name):
    """A table wider than its section scrolls inside it, out of the screenshot's sight: the DOM says so."""
    for table in ("brokers", "moves", "plan", "partitions"):
        fits = driver.execute_script("const t = document.getElementById(arguments[0]);"
                                     "return [t.scrollWidth, t.parentElement.clientWidth];", table)
        assert fits[0] <= fits[1], f"{name}: the {table} table is {fits[0]} px wide in its {fits[1]} px section"


def run(driver, out_dir):
    """Draws both states, compares each with its reference and the two with each other."""
    from selenium.webdriver.common.by import By
    server = FixtureServer()
    try:
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": WIDTH, "height": 900, "deviceScaleFactor": 1, "mobile": False})
        driver.execute_cdp_cmd("Emulation.setScrollbarsHidden", {"hidden": True})  # all 1,280 px for the page
        # The one value that changes by itself: the time of the last refresh.
        script = driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {
            "source": "Date.prototype.toLocaleTimeString = function () { return '12:00:00'; };"})
        driver.get(f"http://127.0.0.1:{server.port}/ui")

        def drawn(state, reachable):
            served = server.served[state]
            rows = driver.find_elements(By.CSS_SELECTOR, "#brokers tbody tr[data-broker='b3']")
            return served >= 2 and rows and rows[0].get_attribute("data-reachable") == reachable

        wait_for("the all-up state drawn", lambda: drawn("all-up", "yes"))
        up = capture(driver)
        up_text = driver.execute_script("return document.body.innerText")
        tables_fit(driver, "all-up")
        table_top = int(driver.execute_script("return document.getElementById('brokers').getBoundingClientRect().top"
                                              " + window.scrollY"))
        server.state = "b3-down"
        wait_for("the b3-down state drawn", lambda: drawn("b3-down", "no"))
        # Drawn twice in this state: the page shows what it keeps across refreshes (b3's last loads, stale).
        mark = server.served["b3-down"]
        wait_for("a second refresh", lambda: server.served["b3-down"] >= mark + 1 and
                 driver.find_elements(By.CSS_SELECTOR, "#brokers tbody tr[data-broker='b3'] .loadcell.stale"))
        down = capture(driver)
        down_text = driver.execute_script("return document.body.innerText")
        tables_fit(driver, "b3-down")
        driver.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument", {"identifier": script["identifier"]})
        driver.execute_cdp_cmd("Emulation.setScrollbarsHidden", {"hidden": False})
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})

        for name, image in (("all-up", up), ("b3-down", down)):
            assert image.size[0] == WIDTH, f"{name}: the page is {image.size[0]} px wide in a {WIDTH} px window"
        count, _ = differing_pixels(up.crop((0, 0, WIDTH, table_top)), down.crop((0, 0, WIDTH, table_top)))
        assert count == 0, f"with b3 down, {count} pixels above the brokers table differ from the all-up page"
        line = 40
        assert down.size[1] <= up.size[1] + 3 * line, (f"with b3 down the page is {down.size[1]} px tall, "
                                                       f"all up {up.size[1]} px")
        compare_with_reference("all-up", up, up_text, out_dir)
        compare_with_reference("b3-down", down, down_text, out_dir)
        print(f"console screens: all up {up.size[0]}x{up.size[1]} px, b3 down {down.size[0]}x{down.size[1]} px")
    finally:
        server.close()
