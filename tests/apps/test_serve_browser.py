"""The web annotator in a real browser: headless Chromium (Debian's ``chromium`` and ``chromedriver``; ``.ci/run``
installs them when missing) signs in, answers ten questions by keyboard, undoes one; the store must hold exactly
those answers, the undone one in its history. The page is saved as ``test-artifacts/serve.png``."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
webdriver = pytest.importorskip("selenium.webdriver")

from selenium.common.exceptions import NoAlertPresentException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as ec  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from jaxclust.active import AnswerStore  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _server  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None or DRIVER is None,
    reason="needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver; .ci/run does)",
)


@pytest.fixture
def browser():
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1100,800"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=webdriver.ChromeService(executable_path=DRIVER), options=opts)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def press(driver, key: str) -> None:
    """Press ``key`` on the page and wait for the next page."""
    old = driver.find_element(By.TAG_NAME, "main")
    driver.find_element(By.TAG_NAME, "body").send_keys(key)
    WebDriverWait(driver, 60).until(ec.staleness_of(old))


def test_ten_answers_by_keyboard_and_an_undo_land_in_the_store(tmp_path, browser):
    gold = _server.write_items(tmp_path)
    proc, url = _server.start(tmp_path)
    try:
        browser.get(url)
        browser.find_element(By.NAME, "annotator").send_keys("alice\n")
        WebDriverWait(browser, 60).until(ec.presence_of_element_located((By.NAME, "i")))
        given = []
        for _ in range(10):
            i = int(browser.find_element(By.NAME, "i").get_attribute("value"))
            j = int(browser.find_element(By.NAME, "j").get_attribute("value"))
            shown = browser.find_element(By.ID, "item-a").text
            assert f"{_server.EVIL} item {i}" in shown  # the script is text on the page, never run
            same = gold[i] == gold[j]
            press(browser, "m" if same else "c")
            given.append((i, j, "must" if same else "cannot"))
        press(browser, "u")
        assert "Undone:" in browser.find_element(By.TAG_NAME, "main").text
        again = (
            int(browser.find_element(By.NAME, "i").get_attribute("value")),
            int(browser.find_element(By.NAME, "j").get_attribute("value")),
        )
        assert again == given[-1][:2]  # the undone pair is asked again
        with pytest.raises(NoAlertPresentException):
            browser.switch_to.alert.text  # noqa: B018
        browser.save_screenshot(str(_server.artifacts() / "serve.png"))
    finally:
        _server.stop(proc)
    with AnswerStore(tmp_path / "answers.sqlite", shared=True) as store:
        assert [(r["i"], r["j"], r["answer"]) for r in store.records] == given[:-1]
        assert {r["annotator"] for r in store.records} == {"alice"}
        history = store.all_answers
        assert [(a["i"], a["j"], a["answer"]) for a in history] == given
        assert [a["undone"] for a in history] == [False] * 9 + [True]
