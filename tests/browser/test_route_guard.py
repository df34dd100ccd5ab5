"""The guard the browser tests rely on: a request that leaves 127.0.0.1 is stopped and
recorded (so "no request left the machine" is a claim that can fail)."""


def test_request_off_the_machine_is_blocked_and_recorded(browser, lab):
    page, guard = browser
    before = len(guard.blocked)
    outcome = page.evaluate("() => fetch('https://example.org/probe.js')"
                            "  .then(() => 'loaded', () => 'blocked')")
    assert outcome == "blocked"
    assert guard.blocked[before:] == ["https://example.org/probe.js"]
    del guard.blocked[before:]  # this one was made on purpose
