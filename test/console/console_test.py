#!/usr/bin/python3
"""The web console in a real browser (headless Chromium through Selenium, 1,280 px wide) against two real moonmqd.

It loads /ui on a broker with tokens, gives the page the admin token, and checks that the page shows both brokers with
figures beside every load bar, the topic's partitions with their owners, and a running move whose progress moves (in
percent and bytes); that the throttle and the balancer's pause work from the page, and that with a client token the
refusal stays in view; with no error in the browser's console but the refused request. Then one broker is killed: its row says so without widening the page past 1,280 px, and its last load bars
are marked stale. Screenshots of both states go to MOONMQ_CONSOLE_SCREENSHOTS (a directory) when it is set.

Then the console is drawn from fixed answers and its screenshots compared with the references (screens.py); the
answers the live brokers gave above check that the fixed ones still have the API's shape.
Usage: console_test.py MOONMQD
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

TOKEN = "console-test-admin-token-0123"
CLIENT_TOKEN = "console-test-client-token-4567"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(port, method, path, body=None):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read() or b"{}")


def main():
    moonmqd = sys.argv[1]
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.common.by import By
    except ImportError:
        print("console test: python3-selenium is missing; run scripts/install-deps.sh")
        return 1
    try:
        import screens  # PIL, for the screenshots
    except ImportError:
        print("console test: python3-pil is missing; run scripts/install-deps.sh")
        return 1
    wait_for = screens.wait_for
    chromium = shutil.which("chromium")
    driver_bin = shutil.which("chromedriver")
    if not chromium or not driver_bin:
        print("console test: chromium and chromium-driver are missing; run scripts/install-deps.sh")
        return 1

    work = tempfile.mkdtemp(prefix="moonmq-console-")
    procs = []
    driver = None
    try:
        ports = {b: (free_port(), free_port()) for b in ("b1", "b2")}
        for b, (api, cluster) in ports.items():
            other = "b2" if b == "b1" else "b1"
            config = {"Server": {
                "Port": api, "DataDir": f"{work}/{b}",
                "Auth": {"Tokens": [{"Name": "ops", "Token": TOKEN, "Role": "admin"},
                                    {"Name": "app", "Token": CLIENT_TOKEN, "Role": "client"}]},
                "Cluster": {"BrokerId": b, "Port": cluster, "Token": "console-cluster-secret",
                            "BatchBytes": 65536,
                            "Peers": [{"Id": other, "Address": f"127.0.0.1:{ports[other][1]}"}]},
                "Autobalance": {"Enabled": True, "DryRun": True, "IntervalSeconds": 1}}}
            with open(f"{work}/{b}.json", "w") as f:
                json.dump(config, f)
            log = open(f"{work}/{b}.log", "w")
            procs.append(subprocess.Popen([moonmqd, "--config", f"{work}/{b}.json"], stdout=log, stderr=log))
        b1 = ports["b1"][0]
        wait_for("the brokers", lambda: all(call(p[0], "GET", "/v1/health")["status"] == "ok" for p in ports.values()))
        call(b1, "POST", "/v1/topics", {"name": "orders", "partitions": 2, "placement": "local"})
        for i in range(100):
            call(b1, "POST", "/v1/topics/orders/records",
                 {"partition": 0, "records": [{"value": "v" * 1000} for _ in range(20)]})
        call(b1, "PUT", "/v1/reassignments/throttle", {"bytes_per_sec": 128 * 1024})
        move = call(b1, "POST", "/v1/reassignments", {"topic": "orders", "partition": 0, "dest": "b2"})
        # A group, so that the cluster's group list has an entry (its shape is checked against the screens' answers).
        call(b1, "POST", "/v1/groups/billing/join", {"topics": ["orders"]})

        options = webdriver.ChromeOptions()
        options.binary_location = chromium
        for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
            options.add_argument(arg)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        driver = webdriver.Chrome(service=Service(driver_bin), options=options)
        driver.set_window_size(1280, 1000)
        driver.get(f"http://127.0.0.1:{b1}/ui")

        # Without a token the page asks for one.
        wait_for("the token form", lambda: driver.find_element(By.ID, "login").is_displayed())
        assert "token" in driver.find_element(By.ID, "error").text
        driver.find_element(By.ID, "token").send_keys(TOKEN)
        driver.find_element(By.CSS_SELECTOR, "#login button").click()

        brokers = wait_for("both brokers", lambda: sorted(
            r.get_attribute("data-broker") for r in driver.find_elements(By.CSS_SELECTOR, "#brokers tbody tr")) ==
            ["b1", "b2"])
        assert brokers
        row = f"#moves tr[data-move='{move['id']}']"
        first = wait_for("the move's row while it copies", lambda: int(
            driver.find_element(By.CSS_SELECTOR, row).get_attribute("data-copied") or 0) or None)
        later = wait_for("the move's progress to move", lambda: (lambda n: n if n > first else None)(
            int(driver.find_element(By.CSS_SELECTOR, row).get_attribute("data-copied") or 0)))
        bar = driver.find_element(By.CSS_SELECTOR, row + " progress")
        assert int(float(bar.get_attribute("value"))) > 0, "the progress bar is empty"
        figure = driver.find_element(By.CSS_SELECTOR, row + " .progresscell .figure").text
        assert "%" in figure and "KiB" in figure, f"the move's progress in figures: {figure!r}"
        print(f"console test: the move's progress went from {first} to {later} bytes in the page ({figure})")
        live_answers = [{e: call(b1, "GET", e) for e in screens.ENDPOINTS}]

        # Every load bar has its figure; the partition-count bar is there too.
        figures = wait_for("the load figures", lambda: [e.text for e in driver.find_elements(
            By.CSS_SELECTOR, "#brokers tbody tr[data-broker='b1'] .loadcell .figure")] or None)
        assert len(figures) == 4 and all(any(ch.isdigit() for ch in f) for f in figures), f"b1's load figures: {figures}"
        # The topic's partitions with their owners.
        owners = wait_for("the partitions", lambda: {r.get_attribute("data-partition"): r.get_attribute("data-owner")
                                                     for r in driver.find_elements(By.CSS_SELECTOR, "#partitions tbody tr")}
                          or None)
        assert owners.get("orders-1") == "b1" and "orders-0" in owners, f"partitions in the page: {owners}"
        # The throttle from the page, then the balancer paused and resumed.
        driver.find_element(By.ID, "throttle_kib").send_keys("64")
        driver.find_element(By.CSS_SELECTOR, "#throttle_form button").click()
        wait_for("the throttle set from the page", lambda: "64.0 KiB/s" in driver.find_element(By.ID, "throttle").text)
        driver.find_element(By.ID, "pause").click()
        wait_for("the balancer paused", lambda: driver.find_element(By.ID, "balancer").text.startswith("paused"))
        driver.find_element(By.ID, "pause").click()
        wait_for("the balancer resumed", lambda: driver.find_element(By.ID, "balancer").text.startswith("on"))
        # With a client token the page still reads, and an action's refusal stays in view across refreshes.
        driver.execute_script("state.token = arguments[0]", CLIENT_TOKEN)
        driver.find_element(By.ID, "pause").click()
        refused = wait_for("the refusal shown", lambda: (lambda e: e.text if e.is_displayed() and "refused" in e.text
                                                         else None)(driver.find_element(By.ID, "error")))
        assert "403" in refused, f"the refusal: {refused!r}"
        shown_at = driver.find_element(By.ID, "updated").text
        wait_for("a later refresh", lambda: driver.find_element(By.ID, "updated").text != shown_at)
        assert driver.find_element(By.ID, "error").is_displayed(), "the refusal vanished at the next refresh"
        assert not driver.find_element(By.ID, "login").is_displayed(), "a refused action asked for a token"
        driver.execute_script("state.token = arguments[0]; state.actionError = ''", TOKEN)
        call(b1, "PUT", "/v1/reassignments/throttle", {"bytes_per_sec": 0})
        wait_for("the move to show done", lambda: driver.find_element(By.CSS_SELECTOR, row).get_attribute(
            "data-step") == "done")
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        # The 401 the page met before it had a token is the only error expected.
        errors = [e for e in errors if "401" not in e["message"] and "403" not in e["message"]]
        assert not errors, f"errors in the browser console: {errors}"

        # A broker down: named in its row, the page no wider than the window, its last loads marked stale.
        shots = os.environ.get("MOONMQ_CONSOLE_SCREENSHOTS")
        if shots:
            os.makedirs(shots, exist_ok=True)
            driver.save_screenshot(os.path.join(shots, "console-all-up.png"))
        procs[1].send_signal(signal.SIGKILL)
        procs[1].wait()
        wait_for("b2 shown as down", lambda: driver.find_element(
            By.CSS_SELECTOR, "#brokers tbody tr[data-broker='b2']").get_attribute("data-reachable") == "no", 40)
        width = driver.execute_script("return document.documentElement.scrollWidth")
        window = driver.execute_script("return window.innerWidth")
        assert width <= window, f"the page is {width} px wide in a {window} px window with a broker down"
        for table in ("brokers", "moves", "partitions"):
            fits = driver.execute_script(
                "const t = document.getElementById(arguments[0]);"
                "return [t.scrollWidth, t.parentElement.clientWidth];", table)
            assert fits[0] <= fits[1], f"the {table} table is {fits[0]} px wide in its {fits[1]} px section"
        stale = driver.find_elements(By.CSS_SELECTOR, "#brokers tbody tr[data-broker='b2'] .loadcell.stale")
        assert len(stale) == 4, f"b2's load bars marked stale: {len(stale)}"
        assert not driver.find_element(By.ID, "error").is_displayed(), driver.find_element(By.ID, "error").text
        if shots:
            driver.save_screenshot(os.path.join(shots, "console-b2-down.png"))
        print(f"console test: with b2 down the page is {width} px wide in a {window} px window")
        live_answers.append({e: call(b1, "GET", e) for e in screens.ENDPOINTS})
        if os.environ.get("MOONMQ_CONSOLE_DUMP_ANSWERS"):
            with open(os.environ["MOONMQ_CONSOLE_DUMP_ANSWERS"], "w") as f:
                json.dump(live_answers, f, indent=1)

        screens.check_shapes(live_answers)
        # This run's screenshots stay where the failure message says when they do not match.
        out_dir = shots or tempfile.mkdtemp(prefix="moonmq-console-screens-")
        try:
            screens.run(driver, out_dir)
        except Exception:
            print(f"console test: this run's screenshots (those taken) are in {out_dir}")
            raise
        if not shots:
            shutil.rmtree(out_dir, ignore_errors=True)
        print("console test: passed")
        return 0
    except Exception as e:
        print(f"console test: FAILED: {e}")
        for b in ("b1", "b2"):
            path = f"{work}/{b}.log"
            if os.path.exists(path):
                print(f"--- {b}.log (tail)")
                print("".join(open(path).readlines()[-20:]))
        return 1
    finally:
        if driver is not None:
            driver.quit()
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
            p.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
