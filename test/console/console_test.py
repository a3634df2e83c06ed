#!/usr/bin/python3
"""The web console in a real browser (headless Chromium through Selenium) against two real moonmqd.

It loads /ui on a broker with client tokens, gives the page a token, and checks that the page shows both brokers and
a running move whose progress moves, with no error in the browser's console. Usage: console_test.py MOONMQD
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


def wait_for(what, check, timeout=30):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            value = check()
            if value:
                return value
        except Exception as e:  # the page or a broker is not there yet
            last = e
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what} (last error: {last})")


def main():
    moonmqd = sys.argv[1]
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.common.by import By
    except ImportError:
        print("console test: python3-selenium is missing; run scripts/install-deps.sh")
        return 1
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
                "Auth": {"Tokens": [{"Name": "ops", "Token": TOKEN, "Role": "admin"}]},
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

        options = webdriver.ChromeOptions()
        options.binary_location = chromium
        for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
            options.add_argument(arg)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        driver = webdriver.Chrome(service=Service(driver_bin), options=options)
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
        print(f"console test: the move's progress went from {first} to {later} bytes in the page")
        call(b1, "PUT", "/v1/reassignments/throttle", {"bytes_per_sec": 0})
        wait_for("the move to show done", lambda: driver.find_element(By.CSS_SELECTOR, row).get_attribute(
            "data-step") == "done")
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        # The 401 the page met before it had a token is the only error expected.
        errors = [e for e in errors if "401" not in e["message"]]
        assert not errors, f"errors in the browser console: {errors}"
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
