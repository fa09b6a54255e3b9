"""Make docs/images/serve.png, the README's picture of ``jaxclust serve``: a few made-up sentences on four topics,
a server on 127.0.0.1, headless Chromium (Debian's ``chromium`` and ``chromedriver``) answering as "maria" until
the model has fitted, then a screenshot of the question page.

    python docs/screenshot_serve.py
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
import urllib.request
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from jaxclust.apps.serve_load import start_server, stop_server

TOPICS = {
    "sport": [
        "the striker scored twice in the second half",
        "the keeper saved a penalty in extra time",
        "the coach changed the team at half time",
        "a late goal won the cup final",
        "the referee showed two red cards",
        "the champions lost at home for the first time",
        "she ran the marathon in under three hours",
        "the team trained all week for the derby",
    ],
    "weather": [
        "heavy rain all day tomorrow in the north",
        "a cold front brings snow to the hills",
        "sunny spells and a light breeze this afternoon",
        "storm warnings for the coast tonight",
        "fog will clear by midday",
        "the heatwave lasts until the weekend",
        "strong winds and showers on monday",
        "frost overnight, then a bright morning",
    ],
    "cooking": [
        "bake the bread for an hour at two hundred degrees",
        "simmer the sauce until it thickens",
        "whisk the eggs with sugar and butter",
        "season the soup with salt and pepper",
        "roast the vegetables with olive oil",
        "knead the dough for ten minutes",
        "fry the onions until golden",
        "let the cake cool before slicing",
    ],
    "finance": [
        "the bank raised interest rates again",
        "shares fell sharply after the report",
        "the lender cut mortgage rates for first buyers",
        "inflation rose to four percent in march",
        "the company reported record profits",
        "bond yields climbed on the news",
        "the central bank held rates steady",
        "investors sold tech stocks on friday",
    ],
}


def main() -> None:
    texts = [t for group in TOPICS.values() for t in group]
    topic = {t: k for k, group in enumerate(TOPICS.values()) for t in group}
    out = Path(__file__).resolve().parent / "images" / "serve.png"
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "texts.txt"
        data.write_text("\n".join(texts) + "\n")
        proc, url = start_server(data, Path(tmp) / "answers.sqlite", "--no-compilation-cache")
        opts = webdriver.ChromeOptions()
        opts.binary_location = shutil.which("chromium")
        for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1000,900"):
            opts.add_argument(arg)
        driver = webdriver.Chrome(service=webdriver.ChromeService(shutil.which("chromedriver")), options=opts)
        try:
            driver.get(url)
            driver.find_element(By.NAME, "annotator").send_keys("maria\n")
            for _ in range(40):
                WebDriverWait(driver, 60).until(ec.presence_of_element_located((By.NAME, "i")))
                status = json.loads(urllib.request.urlopen(url + "api/status").read())
                why = driver.find_element(By.CLASS_NAME, "why").text
                if status["n_fits"] >= 2 and status["fitting_behind"] == 0 and "unsure" in why:
                    break
                i = int(driver.find_element(By.NAME, "i").get_attribute("value"))
                j = int(driver.find_element(By.NAME, "j").get_attribute("value"))
                old = driver.find_element(By.TAG_NAME, "main")
                same = topic[texts[i]] == topic[texts[j]]
                driver.find_element(By.TAG_NAME, "body").send_keys("m" if same else "c")
                WebDriverWait(driver, 60).until(ec.staleness_of(old))
                time.sleep(0.5 if status["n_fits"] < 2 else 3.0)
                driver.refresh()
            driver.save_screenshot(str(out))
        finally:
            driver.quit()
            stop_server(proc)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
