#!/usr/bin/python3
"""The offline profile page in a real browser: headless Chromium driven by
chromium-driver through Selenium loads the pages `tessera run`, `compare`,
`sweep` and `regress` wrote with `--html`, from file://, and checks that
they drew their data: for a run, one timeline slice per trace slice, the
critical path's row and tables, the call-site table's rows, a hovered
slice's label and call site in the tooltip; for the others, their tables'
rows and plots; and that no page fetched anything over the network. Saves
a screenshot of the run's page.

Usage: profile_page_test.py TESSERA_BIN WORK_DIR [SCREENSHOT.png]
Exits 77 (skipped, with the reason) when Chromium, its driver or Selenium
is missing; scripts/setup installs them.
"""
import json
import os
import shutil
import subprocess
import sys
import time

SKIP = 77


def skip(reason):
    print(f"profile_page_test: skipped: {reason} (scripts/setup installs chromium, chromium-driver, python3-selenium)")
    sys.exit(SKIP)


def fail(message):
    print(f"profile_page_test: FAILED: {message}")
    sys.exit(1)


def check(cond, message):
    if not cond:
        fail(message)


try:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
except ImportError:
    skip("python3-selenium is not installed")

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
if not CHROMIUM:
    skip("chromium is not installed")
if not DRIVER:
    skip("chromedriver (chromium-driver) is not installed")

if len(sys.argv) < 3:
    fail(__doc__)
tessera, work = sys.argv[1], sys.argv[2]
screenshot = sys.argv[3] if len(sys.argv) > 3 else os.path.join(work, "profile-page.png")
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)


def tessera_run(*args):
    r = subprocess.run([tessera, *args], capture_output=True, text=True, timeout=300)
    check(r.returncode == 0, f"tessera {' '.join(args)} exited {r.returncode}: {r.stderr}")
    return r


# A traced GEMM on the small config: a few dozen instructions and descriptors.
run_page = os.path.join(work, "run.html")
tessera_run("run", "--config", "small", "--kernel", "gemm", "--variant", "blocked_mnk", "--shape", "M=64,N=256,K=96",
            "--fidelity", "tlm", "--out", os.path.join(work, "run"), "--trace", os.path.join(work, "trace.json"),
            "--html", run_page)
with open(os.path.join(work, "trace.json")) as f:
    trace = json.load(f)
with open(os.path.join(work, "run", "report.json")) as f:
    report = json.load(f)
expected_slices = sum(1 for e in trace["traceEvents"] if e["ph"] == "X")
with open(run_page) as f:
    html = f.read()
check("<script src" not in html and "<link" not in html, "the page refers to an outside file")

compare_page = os.path.join(work, "compare.html")
tessera_run("compare", "--kernel", "gemm", "--configs", "tiny,small", "--shape", "M=32,N=64,K=32", "--fidelity", "tlm",
            "--no-data", "--no-plots", "-j", "2", "--out", os.path.join(work, "compare"), "--html", compare_page)

# A sweep of two GEMM variants over three HBM bandwidths on tiny.
study = os.path.join(work, "study.yaml")
with open(study, "w") as f:
    f.write("""description: the page test's sweep
base: tiny
fidelity: tlm
no_data: true
parameters:
  - name: hbm_gbps
    key: hbm.bandwidth_gbps
    values: [8, 16, 32]
kernels:
  - kernel: gemm
    variants: [naive, blocked_mnk]
    shapes: [{M: 32, N: 32, K: 32}]
""")
sweep_page = os.path.join(work, "sweep.html")
tessera_run("sweep", study, "--no-plots", "-j", "2", "--out", os.path.join(work, "sweep"), "--html", sweep_page)

# A suite run against a baseline made here, with one job's time halved in
# it (that job is then 100 % slower) and one job left out (no baseline).
suite = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "regressions", "smoke.yaml")
jobs_filter = "gemm/*/tiny/K70_M40_N130"
baseline = os.path.join(work, "baseline.json")
tessera_run("regress", suite, "--filter", jobs_filter, "-j", "2", "--out", os.path.join(work, "regress-base"),
            "--baseline", baseline, "--update-baseline")
with open(baseline) as f:
    times = json.load(f)
ids = sorted(times)
check(len(ids) >= 3, f"the filter {jobs_filter} matched {len(ids)} jobs")
slower_job, unknown_job = ids[0], ids[1]
times[slower_job]["time_ns"] /= 2
del times[unknown_job]
with open(baseline, "w") as f:
    json.dump(times, f)
regress_page = os.path.join(work, "regress.html")
r = subprocess.run([tessera, "regress", suite, "--filter", jobs_filter, "-j", "2", "--out", os.path.join(work, "regress"),
                    "--baseline", baseline, "--html", regress_page], capture_output=True, text=True, timeout=300)
check(r.returncode == 1, f"the regress run with a slower job exited {r.returncode}: {r.stderr}")

options = webdriver.ChromeOptions()
options.binary_location = CHROMIUM
for arg in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,1100",
            # No network at all: the page must need none.
            "--proxy-server=http://0.0.0.0:9", "--proxy-bypass-list=<-loopback>"]:
    options.add_argument(arg)
try:
    browser = webdriver.Chrome(service=Service(DRIVER), options=options)
except Exception as e:  # a browser that cannot start here is an environment problem, not the page's
    skip(f"chromium did not start: {str(e).splitlines()[0]}")


def wait_for(script, what, timeout=30):
    end = time.time() + timeout
    while time.time() < end:
        value = browser.execute_script(script)
        if value:
            return value
        time.sleep(0.1)
    fail(f"timed out waiting for {what}")


try:
    browser.get("file://" + os.path.abspath(run_page))
    wait_for("return window.tessera && window.tessera.ready", "the run page to draw")
    errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    check(not errors, f"the page logged errors: {errors}")
    resources = browser.execute_script("return performance.getEntriesByType('resource').map(r => r.name)")
    check(not resources, f"the page fetched {resources}")

    slices = browser.execute_script("return window.tessera.slices")
    check(slices == expected_slices, f"the timeline drew {slices} slices; the trace has {expected_slices}")
    drawn = browser.find_element(By.ID, "timeline").get_attribute("data-slices")
    check(drawn == str(expected_slices), f"#timeline says {drawn} slices")
    tracks = browser.execute_script("return window.tessera.tracks")
    for t in ["tensor", "tensor weights", "vector", "tensor stalls"]:
        check(t in tracks, f"no track '{t}' in {tracks}")
    check(any(t.startswith("dma ") for t in tracks), f"no DMA queue track in {tracks}")

    # The critical path: a row of its own with a rectangle per step that
    # holds time, the slices of those steps outlined, and its tables.
    path = report["critical_path"]
    check(tracks[0] == "critical path", f"the first track is {tracks[0]!r}, not the critical path")
    steps = browser.execute_script("return window.tessera.pathSteps")
    expected_steps = sum(1 for s in path["steps"] if s["to_ns"] > s["from_ns"])
    check(steps == expected_steps, f"the path row drew {steps} steps; the report has {expected_steps}")
    outlined = browser.execute_script("return window.tessera.pathSlices")
    check(outlined >= len({(s["resource"], s["kind"], s["index"]) for s in path["steps"] if s["kind"] != "instruction"}),
          f"only {outlined} slices outlined for {len(path['steps'])} steps")
    rows = browser.find_elements(By.CSS_SELECTOR, "#path-labels tr")
    check(len(rows) == min(100, len(path["by_label"])) + 1, f"#path-labels has {len(rows) - 1} rows")
    waits = browser.find_elements(By.CSS_SELECTOR, "#path-waits tr")
    check(len(waits) == min(100, len(path["waits"])) + 1 and len(path["waits"]) > 0, f"#path-waits has {len(waits) - 1} rows")
    summary = browser.find_element(By.ID, "path-summary").text
    check(path["by_engine"][0]["engine"] in summary, f"the path summary {summary!r} misses its first engine")

    rows = browser.find_elements(By.CSS_SELECTOR, "#by-site tr")
    check(len(rows) == len(report["by_site"]) + 1, f"#by-site has {len(rows) - 1} rows; the report {len(report['by_site'])}")
    first = rows[1].find_elements(By.TAG_NAME, "td")
    check(first[1].text == report["by_site"][0]["site"], f"first call site {first[1].text!r}")
    check(browser.find_elements(By.CSS_SELECTOR, "#by-label tr"), "no #by-label table")
    for chart in ["stalls", "roofline"]:
        check(browser.find_elements(By.CSS_SELECTOR, f"#{chart} canvas"), f"no #{chart} chart")
    check("tensor waiting for DMA" in browser.find_element(By.ID, "top-stalls").text, "the top stalls are missing")

    # Hover the widest labelled instruction slice: its tooltip names its
    # label and call site.
    index = browser.execute_script("""
        let best = -1, width = 0;
        for (let i = 0; i < window.tessera.slices; ++i) {
          const s = window.tessera.sliceArgs(i);
          if (s.cat === 'instruction' && s.args && s.args.label && s.args.site && s.dur > width) { best = i; width = s.dur; }
        }
        return best;""")
    check(index >= 0, "no labelled instruction slice")
    target = browser.execute_script(f"return window.tessera.sliceArgs({index})")
    x, y = browser.execute_script(f"return window.tessera.slicePixel({index})")
    box = browser.find_element(By.ID, "timeline")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", box)
    size = box.size
    ActionChains(browser).move_to_element_with_offset(box, int(x - size["width"] / 2), int(y - size["height"] / 2)).perform()
    label, site = target["args"]["label"], target["args"]["site"]
    wait_for(f"return document.getElementById('timeline').innerText.includes({json.dumps(label)}) && "
             f"document.getElementById('timeline').innerText.includes({json.dumps(site)})",
             f"a tooltip naming '{label}' at {site}", timeout=10)
    browser.execute_script("window.scrollTo(0, 0)")
    browser.save_screenshot(screenshot)

    browser.get("file://" + os.path.abspath(compare_page))
    wait_for("return window.tessera && window.tessera.ready", "the compare page to draw")
    rows = browser.find_elements(By.CSS_SELECTOR, "#compare tr")
    check(len(rows) == 3, f"#compare has {len(rows) - 1} rows, not 2")
    check(rows[1].find_elements(By.TAG_NAME, "td")[0].text == "tiny", "the first config is not tiny")
    check(browser.find_elements(By.CSS_SELECTOR, "#compare-time canvas"), "no time chart")
    check(browser.execute_script("return window.tessera.series") == 3, "the compare plot lacks time, speed-up or HFU")
    check(len(browser.find_elements(By.CSS_SELECTOR, "#compare-sites tr")) > 2, "no call sites per config")

    def load(page, what):
        browser.get("file://" + os.path.abspath(page))
        wait_for("return window.tessera && window.tessera.ready", f"the {what} page to draw")
        errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
        check(not errors, f"the {what} page logged errors: {errors}")
        resources = browser.execute_script("return performance.getEntriesByType('resource').map(r => r.name)")
        check(not resources, f"the {what} page fetched {resources}")

    load(sweep_page, "sweep")
    with open(os.path.join(work, "sweep", "results.json")) as f:
        swept = json.load(f)
    rows = browser.find_elements(By.CSS_SELECTOR, "#sweep tr")
    check(len(rows) == len(swept["points"]) + 1 == 7, f"#sweep has {len(rows) - 1} rows for {len(swept['points'])} points")
    heads = [th.text for th in rows[0].find_elements(By.TAG_NAME, "th")]
    check("hbm_gbps" in heads, f"no swept column in {heads}")
    check(browser.find_elements(By.CSS_SELECTOR, "#sweep-time canvas"), "no time chart on the sweep page")
    lines = browser.execute_script("return window.tessera.series")
    check(lines == 2, f"the sweep's plot has {lines} lines, not one per variant")
    first = rows[1].find_elements(By.TAG_NAME, "td")
    time_cell = heads.index("time us")
    point = swept["points"][0]
    check(first[time_cell].text == f"{point['report']['time_ns'] / 1000:.2f}",
          f"the first point's time {first[time_cell].text!r} against {point['report']['time_ns']} ns")

    load(regress_page, "regress")
    rows = browser.find_elements(By.CSS_SELECTOR, "#regress tr")
    check(len(rows) == len(ids) + 1, f"#regress has {len(rows) - 1} rows for {len(ids)} jobs")
    cells = [[td.text for td in row.find_elements(By.TAG_NAME, "td")] for row in rows[1:]]
    by_id = {c[0]: c for c in cells}
    check(by_id[slower_job][1] == "slower" and by_id[slower_job][4] == "+100.00%",
          f"the slowed job reads {by_id[slower_job]}")
    check(by_id[unknown_job][3] == "" and by_id[unknown_job][4] == "", f"the job without a baseline reads {by_id[unknown_job]}")
    check(cells[0][0] == slower_job, "the slower job is not listed first")
    summary = browser.find_element(By.ID, "regress-summary").text
    check(f"{len(ids)} jobs" in summary and "1 slower" in summary, f"the summary says {summary!r}")
    check(browser.find_elements(By.CSS_SELECTOR, "#regress-change canvas"), "no time-change chart")
finally:
    browser.quit()

print(f"profile_page_test: ok: {expected_slices} slices, {len(report['by_site'])} call sites, "
      f"{len(report['critical_path']['steps'])} critical-path steps, tooltip of slice {index}; "
      f"sweep and regress pages; screenshot {screenshot}")
