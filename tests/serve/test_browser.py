"""The published page in a real headless browser: Debian's chromium driven by
Playwright (its own browser download is never used: ``executable_path`` is the
system's chromium, installed by ``.ci/run``).  Type a range, read the answer and
interval the page shows, compare them with the synopsis; drag over the bars;
screenshots that are not blank; no console error (CSP included)."""
import os
import shutil

import numpy as np
import pytest

from serve_support import save_examples, served

pytestmark = pytest.mark.integration

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
PIL = pytest.importorskip("PIL.Image", reason="Pillow (with matplotlib) reads the screenshots")

CHROMIUM = next((p for p in (shutil.which("chromium"), shutil.which("chromium-browser"),
                             "/usr/bin/chromium") if p and os.path.exists(p)), None)
if CHROMIUM is None:
    pytest.skip("Debian's chromium is not installed (apt-get install chromium; .ci/run does)",
                allow_module_level=True)


@pytest.fixture(scope="module")
def examples(tmp_path_factory):
    return save_examples(tmp_path_factory.mktemp("serve-browser"))


@pytest.fixture(scope="module")
def page_of(examples):
    with served(*[path for path, _ in examples.values()]) as (base, proc):
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM,
                                        args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            problems = []
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(str(e)))

            def open_page(name):
                page.goto(f"{base}/s/{name}")
                page.wait_for_selector("body[data-ready=true]", timeout=30_000)
                return page

            open_page.problems = problems
            yield open_page
            browser.close()


def shown(page):
    """The answer and interval as the page shows them (the full numbers it was sent,
    kept beside the rounded text) and as text."""
    values = {k: float(page.get_attribute(f"#{k}", "data-value")) for k in
              ("answer", "std", "low", "high")}
    texts = {k: page.text_content(f"#{k}") for k in values}
    return values, texts


def colours(path):
    pixels = np.asarray(PIL.open(path).convert("RGB")).reshape(-1, 3)
    return len(np.unique(pixels, axis=0))


def test_typed_range_shows_the_synopsis_answer(page_of, examples, tmp_path):
    syn = examples["ages"][1]
    page = page_of("ages")
    page.fill("#lo-0", "2500")
    page.fill("#hi-0", "61000")
    page.click("#count-button")
    page.wait_for_selector("#result:not([hidden])")
    page.wait_for_function("document.querySelector('#answer').dataset.value !== undefined")
    values, texts = shown(page)
    bars = syn.confidence_intervals([2500], [61000])
    assert values["answer"] == syn.count(2500, 61000) == bars.answer[0]
    assert values["low"] == bars.low[0] and values["high"] == bars.high[0]
    assert values["std"] == bars.std[0]
    assert texts["answer"].replace(",", "") == f"{bars.answer[0]:.1f}"
    shot = tmp_path / "ages.png"
    page.screenshot(path=str(shot), full_page=True)
    assert colours(shot) > 50            # bars, whiskers, text: far from a blank page
    assert page.locator("#bars rect.bar").count() == 120
    assert page_of.problems == []


def test_drag_selects_bins(page_of, examples):
    syn = examples["ages"][1]
    page = page_of("ages")
    box = page.locator("#bars").bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] * 0.3, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.5, y, steps=5)
    page.mouse.up()
    page.wait_for_selector("#result:not([hidden])")
    lo, hi = page.input_value("#lo-0"), page.input_value("#hi-0")
    assert 0 < int(lo) < int(hi) < 99_999
    page.wait_for_function(f"document.querySelector('#answer').dataset.value == "
                           f"'{syn.count(int(lo), int(hi))!r}'")
    assert float(page.get_attribute("#answer", "data-value")) == syn.count(int(lo), int(hi))


def test_dates_and_boxes_in_user_units(page_of, examples, tmp_path):
    dates = examples["dates"][1]
    page = page_of("dates")
    page.fill("#lo-0", "2001-04-01")
    page.fill("#hi-0", "2001-09-30")
    page.click("#count-button")
    page.wait_for_selector("#result:not([hidden])")
    assert shown(page)[0]["answer"] == dates.count("2001-04-01", "2001-09-30")
    where = examples["where"][1]
    page = page_of("where")
    for field, value in (("#lo-0", "40.25"), ("#hi-0", "40.75"), ("#lo-1", "-74.2"),
                         ("#hi-1", "-73.8")):
        page.fill(field, value)
    page.click("#count-button")
    page.wait_for_selector("#result:not([hidden])")
    values, _ = shown(page)
    bars = where.confidence_intervals(np.array([["40.25", "-74.2"]], dtype=object),
                                      np.array([["40.75", "-73.8"]], dtype=object))
    assert values["answer"] == bars.answer[0] and values["high"] == bars.high[0]
    shot = tmp_path / "where.png"
    page.screenshot(path=str(shot), full_page=True)
    assert colours(shot) > 50            # the heat map's colours
    page.fill("#lo-0", "39")             # outside the domain: the server's one line
    page.click("#count-button")
    page.wait_for_selector("#error:not([hidden])")
    assert "domain" in page.text_content("#error")
    assert page_of.problems == [] or all("400" in p for p in page_of.problems)


def test_counter_page(page_of, examples, tmp_path):
    counter = examples["counter"][1]
    page = page_of("counter")
    assert page.text_content("#release").replace(",", "") == str(counter.release)
    shot = tmp_path / "counter.png"
    page.screenshot(path=str(shot), full_page=True)
    assert colours(shot) > 20
