"""A real JupyterLab on 127.0.0.1 driven by headless Chromium (Playwright).

One lab server and one browser page per test session. A route guard lets through only
requests to 127.0.0.1 (and data:/blob: URLs), records every other one, and the session fails
if any was made. Without Chromium, Playwright, JupyterLab or the built front end the tests
skip, except in CI (``CI=true``), where a missing piece is a failure.
"""
import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path(os.environ.get("FLUID_CHROMIUM", "/usr/bin/chromium"))
SCREENSHOTS = Path(os.environ.get("FLUID_SCREENSHOT_DIR", "screenshots"))
LOCAL_PREFIXES = ("http://127.0.0.1:", "ws://127.0.0.1:", "data:", "blob:", "about:")
SLOW = 120_000  # ms: generous, the suite runs on small CI machines


def _missing_pieces():
    missing = []
    if not CHROMIUM.exists():
        missing.append(f"chromium at {CHROMIUM} (apt-get install -y chromium)")
    for module in ("playwright", "jupyterlab", "anywidget"):
        try:
            __import__(module)
        except ImportError:
            missing.append(f"the Python package {module}")
    for built in ("viewer.js", "widget.js"):
        if not (REPO / "fluid_nb" / "static" / built).is_file():
            missing.append(f"fluid_nb/static/{built} (pip install -e . builds it)")
    if "jupyterlab" not in " ".join(missing) and not _labextension_installed():
        missing.append("the fluid-nb-labext JupyterLab extension (pip install -e . installs it)")
    return missing


def _labextension_installed():
    from jupyter_core.paths import jupyter_path
    return any((Path(d) / "fluid-nb-labext" / "package.json").is_file()
               for d in jupyter_path("labextensions"))


@pytest.fixture(scope="session")
def browser_ready():
    missing = _missing_pieces()
    if missing:
        message = "browser tests need " + "; ".join(missing)
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _write_json(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


class Lab:
    """A running ``jupyter lab``: its URL, token, root folder and log."""

    def __init__(self, base, token, root, log, proc):
        self.base, self.token, self.root, self.log, self.proc = base, token, root, log, proc

    def api(self, path, method="GET", body=None):
        request = urllib.request.Request(
            f"{self.base}{path}", method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=10) as response:
            text = response.read()
        return json.loads(text) if text else None

    def log_tail(self, lines=40):
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def shutdown_kernels(self):
        for kernel in self.api("/api/kernels"):
            self.api(f"/api/kernels/{kernel['id']}", method="DELETE")


@pytest.fixture(scope="session")
def lab(browser_ready, tmp_path_factory):
    top = tmp_path_factory.mktemp("lab")
    root = top / "root"
    root.mkdir()
    settings = top / "settings"
    _write_json(settings / "@jupyterlab/apputils-extension/notification.jupyterlab-settings",
                {"fetchNews": "false", "checkForUpdates": False})
    _write_json(settings / "@jupyter-widgets/jupyterlab-manager/plugin.jupyterlab-settings",
                {"saveState": True})
    config = top / "config"
    # the server extension (viewer.js, program files), whatever the install left in etc/
    _write_json(config / "jupyter_server_config.json",
                {"ServerApp": {"jpserver_extensions": {"fluid_nb": True}}})
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(top / "runtime"),
               JUPYTER_CONFIG_DIR=str(config))
    log = top / "lab.log"
    command = [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root",
               "--ip=127.0.0.1", f"--port={port}", "--ServerApp.port_retries=0",
               f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
               f"--LabApp.user_settings_dir={settings}", f"--LabApp.workspaces_dir={top / 'ws'}",
               "--LabApp.expose_app_in_browser=True",
               "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env,
                                cwd=str(root))
    server = Lab(f"http://127.0.0.1:{port}", token, root, log, proc)
    deadline = time.monotonic() + 90
    while True:
        if proc.poll() is not None:
            pytest.fail(f"jupyter lab exited with {proc.returncode}:\n{server.log_tail()}")
        try:
            server.api("/api/status")
            break
        except OSError:
            if time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"jupyter lab did not answer in 90 s:\n{server.log_tail()}")
            time.sleep(0.3)
    yield server
    try:
        server.api("/api/shutdown", method="POST")
        proc.wait(20)
    except (OSError, subprocess.TimeoutExpired):
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


class RouteGuard:
    """Continues requests to 127.0.0.1; aborts and records every other one."""

    def __init__(self):
        self.blocked = []

    def __call__(self, route):
        url = route.request.url
        if url.startswith(LOCAL_PREFIXES):
            route.continue_()
        else:
            self.blocked.append(url)
            route.abort()


@pytest.fixture(scope="session")
def browser(lab, tmp_path_factory):
    from playwright.sync_api import sync_playwright
    guard = RouteGuard()
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("profile")), executable_path=str(CHROMIUM),
            headless=True, viewport={"width": 1280, "height": 1400},
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"])
        context.route("**/*", guard)
        context.set_default_timeout(SLOW)
        page = context.pages[0] if context.pages else context.new_page()
        page.goto(f"{lab.base}/lab?token={lab.token}")
        page.wait_for_function("() => window.jupyterapp !== undefined")
        page.evaluate("async () => { await window.jupyterapp.restored; }")
        yield page, guard
        context.close()
    assert guard.blocked == [], f"requests left 127.0.0.1: {guard.blocked}"


@pytest.fixture
def page(browser, lab):
    """The one Lab page; each test starts with no open documents, no kernels and the file
    browser at the lab's root, and ends
    with no request having left 127.0.0.1."""
    page, guard = browser
    yield page
    # close without the "save changes?" dialog: what the tests ran need not be kept
    page.evaluate("async () => { const app = window.jupyterapp;"
                  " for (const w of app.shell.widgets('main'))"
                  "   if (w.context) w.context.model.dirty = false;"
                  " await app.commands.execute('application:close-all');"
                  # and the file browser back at the root, where the next test's files are
                  " await app.commands.execute('filebrowser:go-to-path', {path: '/'}); }")
    lab.shutdown_kernels()
    assert guard.blocked == [], f"requests left 127.0.0.1: {guard.blocked}"


def screenshot(target, name):
    """Save a screenshot of a page or an element for people to look at."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    target.screenshot(path=str(path))
    return path
