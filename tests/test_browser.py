"""The lessons as a learner meets them: JupyterLab in a real browser, Run All, look at the result.

JupyterLab is started the way `make lab` starts it (`effitrain lab --no-browser`), on a free
localhost port, over copies of the learner editions in a temporary folder (so autosave never
touches the checkout). Debian's Chromium, driven by Playwright, opens each lesson, runs all its
cells from the Run menu and waits for the kernel. A lesson passes when every code cell ran, no
cell shows an error, every figure is an image the browser decoded, and every widget rendered and
responds when moved. A screenshot of each lesson after Run All is saved under
`artifacts/browser/` (override with EFFITRAIN_ARTIFACTS).

`test_a_lesson_that_raises_fails` runs the same check on a deliberately broken copy of a lesson
and requires it to fail, so the check is known to catch a lesson that raises in the browser.

This is the learner editions' one full run in `make test`, English and Turkish
(tests/test_lesson_runs.py runs the English solution editions; pyproject.toml says which run proves
what). Under `make test` the English
and the Turkish editions run on two pytest-xdist workers side by side, each with its own JupyterLab
and Chromium (tests/conftest.py).
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from test_translations import english_words

from effitrain_lessons import lessons as manifest
from effitrain_lessons.shared.i18n import translator

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"


def lesson_notebooks() -> list[str]:
    """The English learner editions, as the manifest lists the lessons: "NN_name.ipynb"."""
    return [each.notebook for each in manifest.LESSONS]


LESSONS = lesson_notebooks()
# The Turkish editions, in a tr/ folder of the same JupyterLab (as in the checkout): "tr/NN_name.ipynb".
TURKISH = [f"tr/{name}" for name in LESSONS]
ARTIFACTS = Path(os.environ.get("EFFITRAIN_ARTIFACTS", ROOT / "artifacts")) / "browser"
CHROMIUM = os.environ.get("EFFITRAIN_CHROMIUM", "/usr/bin/chromium")
TOKEN = "effitrain-browser-test"
RUN_ALL_TIMEOUT_S = 420

# Flags for a headless Chromium on a machine without a network: no background traffic, no GPU.
CHROMIUM_ARGS = [
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]

# JupyterLab user settings for the test server: every cell attached to the page (so the page can
# be checked cell by cell), no news or update checks (there is no network).
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
}


def _chromium_or_skip() -> str:
    if Path(CHROMIUM).exists():
        return CHROMIUM
    if shutil.which("apt-get"):
        pytest.fail(f"Chromium is not at {CHROMIUM}: run `make test`, which installs Debian's chromium.")
    pytest.skip(f"Chromium is not at {CHROMIUM} and this system has no apt-get: set EFFITRAIN_CHROMIUM.")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get_json(url: str):
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response)


@dataclass
class Lab:
    """A running JupyterLab over a folder of notebooks."""

    url: str
    folder: Path
    process: subprocess.Popen

    def api(self, path: str):
        return _get_json(f"{self.url}/api/{path}?token={TOKEN}")

    def kernels_idle(self) -> bool:
        try:
            kernels = self.api("kernels")
        except urllib.error.HTTPError:  # the server answers 500 while a kernel is still starting
            return False
        return bool(kernels) and all(kernel["execution_state"] == "idle" for kernel in kernels)

    def shut_down_kernels(self) -> None:
        for session in self.api("sessions"):
            request = urllib.request.Request(
                f"{self.url}/api/sessions/{session['id']}?token={TOKEN}", method="DELETE"
            )
            try:
                urllib.request.urlopen(request, timeout=30).close()
            except urllib.error.HTTPError:  # already gone
                pass


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> Lab:
    folder = tmp_path_factory.mktemp("lessons")
    (folder / "tr").mkdir()
    for name in [*LESSONS, *TURKISH]:
        shutil.copy(NOTEBOOKS / name, folder / name)
    settings = tmp_path_factory.mktemp("lab-settings")
    for name, values in LAB_SETTINGS.items():
        target = settings / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values))
    env = dict(
        os.environ,
        JUPYTER_TOKEN=TOKEN,
        JUPYTERLAB_SETTINGS_DIR=str(settings),
        JUPYTERLAB_WORKSPACES_DIR=str(tmp_path_factory.mktemp("lab-workspaces")),
        JUPYTER_RUNTIME_DIR=str(tmp_path_factory.mktemp("lab-runtime")),
    )
    port = _free_port()
    log = open(folder.parent / "lab.log", "w")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "effitrain_lessons",
            "lab",
            "--no-browser",
            "--port",
            str(port),
            "--dir",
            str(folder),
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    server = Lab(f"http://127.0.0.1:{port}", folder, process)
    deadline = time.monotonic() + 120
    while True:
        try:
            server.api("status")
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                log.close()
                pytest.fail(f"JupyterLab did not start: {(folder.parent / 'lab.log').read_text()[-2000:]}")
            time.sleep(0.5)
    yield server
    try:
        server.shut_down_kernels()
    except OSError:
        pass
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    log.close()


@pytest.fixture(scope="module")
def browser():
    executable = _chromium_or_skip()
    _remove_stale_screenshots()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def _remove_stale_screenshots() -> None:
    """Each screenshot replaces its own file; this removes those of lessons that no longer exist. (Not the
    whole folder: under `make test` the English and the Turkish runs take pictures side by side.)"""
    stems = {Path(name).stem for name in LESSONS}
    for picture in ARTIFACTS.rglob("*.png"):
        if not any(picture.stem == stem or picture.stem.startswith(stem + "-") for stem in stems):
            picture.unlink(missing_ok=True)


@dataclass
class RunAll:
    """What one lesson showed after Run All."""

    lesson: str
    seconds: float
    code_cells: int
    executed: int
    errors: list[str] = field(default_factory=list)
    images: int = 0
    broken_images: int = 0
    widgets: int = 0
    problems: list[str] = field(default_factory=list)


def _open(page, lab: Lab, name: str) -> None:
    # a fresh workspace per lesson
    workspace = name.removesuffix(".ipynb").replace("_", "-").replace("/", "-")
    page.goto(f"{lab.url}/lab/workspaces/{workspace}/tree/{name}?token={TOKEN}")
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=120_000)
    open_tab = page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current")
    if open_tab.count():
        open_tab.first.click()  # fold the file browser away: the lesson gets the width
    deadline = time.monotonic() + 120
    while not lab.kernels_idle():  # the kernel has started and is waiting
        if time.monotonic() > deadline:
            raise AssertionError(f"{name}: the kernel did not start within 120 s")
        time.sleep(0.5)


def _run_all(page, lab: Lab, name: str) -> float:
    start = time.monotonic()
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator("li.lm-Menu-item[data-command='runmenu:run-all']").click()
    page.wait_for_function("document.querySelectorAll('.jp-InputPrompt').length > 0")
    quiet = 0
    while quiet < 3:  # three idle looks in a row, 1 s apart, with no cell queued or running
        if time.monotonic() - start > RUN_ALL_TIMEOUT_S:
            raise AssertionError(f"{name}: Run All did not finish within {RUN_ALL_TIMEOUT_S} s")
        time.sleep(1)
        busy = page.evaluate(
            "[...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')].some(p => "
            "p.textContent.includes('*'))"
        )
        quiet = quiet + 1 if not busy and lab.kernels_idle() else 0
    return time.monotonic() - start - 3


def _saved_notebook(page, lab: Lab, name: str) -> dict:
    """Save from the browser (what the learner would save) and read the file back."""
    before = (lab.folder / name).stat().st_mtime_ns
    page.locator(".jp-NotebookPanel:visible").first.click(position={"x": 5, "y": 5})
    page.keyboard.press("Control+s")
    deadline = time.monotonic() + 60
    while (lab.folder / name).stat().st_mtime_ns == before:
        if time.monotonic() > deadline:
            raise AssertionError(f"{name}: saving from the browser did not write the notebook")
        time.sleep(0.3)
    time.sleep(0.5)
    return json.loads((lab.folder / name).read_text())


def check_lesson(page, lab: Lab, name: str, screenshot: Path | None = None) -> RunAll:
    """Open `name`, Run All, and return what the learner saw; raise AssertionError on any problem."""
    _open(page, lab, name)
    seconds = _run_all(page, lab, name)
    notebook = _saved_notebook(page, lab, name)
    code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    result = RunAll(name, seconds, len(code), sum(cell.get("execution_count") is not None for cell in code))
    for cell in code:
        for output in cell.get("outputs", []):
            if output["output_type"] == "error":
                result.errors.append(f"cell {cell.get('id')}: {output['ename']}: {output['evalue']}")
    if result.errors:
        result.problems.append("cells raised: " + "; ".join(result.errors))
    if result.executed < result.code_cells:
        result.problems.append(f"only {result.executed} of {result.code_cells} code cells ran")
    page_errors = page.locator(
        ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']", has_text="Traceback"
    ).count()
    if page_errors:
        result.problems.append(f"{page_errors} output(s) on the page show a traceback")

    figures = sum(
        "image/png" in output.get("data", {}) for cell in code for output in cell.get("outputs", [])
    )
    result.images, result.broken_images = page.evaluate(
        """() => {
            const images = [...document.querySelectorAll('.jp-OutputArea-output img')];
            return [images.length, images.filter(i => !(i.complete && i.naturalWidth > 0)).length];
        }"""
    )
    if result.images < figures:
        result.problems.append(
            f"the notebook holds {figures} figures but the page shows {result.images} images"
        )
    if result.broken_images:
        result.problems.append(f"{result.broken_images} images did not decode")

    result.widgets = page.locator(
        ".jp-OutputArea-output .widget-slider, .jp-OutputArea-output .widget-dropdown"
    ).count()
    failed = page.locator(".jp-OutputArea-output", has_text="Error displaying widget").count()
    failed += page.locator(".jp-OutputArea-output", has_text="Loading widget").count()
    if failed:
        result.problems.append(f"{failed} widget(s) did not render")

    if name.startswith("tr/"):  # a Turkish edition shows Turkish: its prose and what its cells print
        shown = page.evaluate(
            """() => [...document.querySelectorAll('.jp-RenderedMarkdown, .jp-OutputArea-output')]
                .filter(e => e.getAttribute('data-mime-type') !== 'application/vnd.jupyter.stderr')
                .map(e => { const c = e.cloneNode(true);
                    c.querySelectorAll('code, a, em, pre.jp-CodeMirror, .cm-editor')
                    .forEach(x => x.remove()); return c.innerText; })"""
        )
        english = [line.strip()[:160] for text in shown for line in text.splitlines() if english_words(line)]
        if english:
            result.problems.append(f"English on the page of a Turkish edition: {english[:8]}")
    if screenshot is not None:
        _screenshot(page, screenshot)
    if result.problems:
        raise AssertionError(f"{name} in JupyterLab: " + " | ".join(result.problems))
    return result


def _screenshot(page, path: Path) -> list[Path]:
    """The whole lesson, top to bottom: the window is made as tall as the notebook, up to 15,000
    pixels a picture; a longer lesson is saved in parts (`name-1.png`, `name-2.png`, ...)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    for old in [path, *path.parent.glob(f"{path.stem}-[0-9]*.png")]:
        old.unlink(missing_ok=True)
    scroller = page.locator(".jp-NotebookPanel:visible .jp-WindowedPanel-outer").first
    total = scroller.evaluate("element => element.scrollHeight")
    width = page.viewport_size["width"]
    part_height = 15_000
    chrome = page.viewport_size["height"] - scroller.evaluate("element => element.clientHeight")
    page.set_viewport_size({"width": width, "height": min(total, part_height) + chrome})
    parts = list(range(0, total, part_height))
    paths = (
        [path]
        if len(parts) == 1
        else [path.with_name(f"{path.stem}-{i}.png") for i in range(1, len(parts) + 1)]
    )
    for offset, target in zip(parts, paths):
        scroller.evaluate("(element, top) => { element.scrollTop = top; }", offset)
        time.sleep(0.5)
        page.screenshot(path=str(target))
    page.set_viewport_size({"width": width, "height": 900})
    return paths


def _cell(page, call: str):
    """The code cell whose source contains `call` (JupyterLab's cells carry no id on the page)."""
    cells = page.locator(".jp-NotebookPanel:visible .jp-CodeCell").filter(
        has=page.locator(".jp-InputArea", has_text=call)
    )
    assert cells.count() == 1, f"expected one cell calling {call}, found {cells.count()}"
    return cells.first


def _output_images(cell) -> list[str]:
    return cell.locator(".jp-OutputArea-output img").evaluate_all("images => images.map(i => i.src)")


def _wait_for_new_figure(cell, before: list[str], timeout_s: float) -> list[str]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        now = _output_images(cell)
        if now and now != before:
            return now
        time.sleep(0.5)
    raise AssertionError(f"moving the control did not redraw the figure within {timeout_s} s")


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    yield page
    context.close()


@pytest.mark.parametrize("name", [*LESSONS, *TURKISH])
def test_lesson_runs_in_jupyterlab(lab, page, name):
    _ = translator("tr" if name.startswith("tr/") else "en")
    result = check_lesson(page, lab, name, screenshot=ARTIFACTS / name.replace(".ipynb", ".png"))
    shots = ARTIFACTS / "tr" if name.startswith("tr/") else ARTIFACTS
    name = Path(name).name
    assert result.code_cells > 0 and result.executed == result.code_cells
    if manifest.lesson(name[:2]).figures:  # the lessons whose cells draw
        assert result.images >= 1, f"{name} shows no figure"
    if name.startswith("01"):  # the segments slider moves the highlighted k and redraws the trade-off figure
        cell = _cell(page, "segments_explorer(")
        before = _output_images(cell)
        handle = cell.locator(".noUi-handle").first
        value = handle.get_attribute("aria-valuetext")
        handle.focus()
        page.keyboard.press("ArrowLeft")
        _wait_for_new_figure(cell, before, timeout_s=30)
        assert handle.get_attribute("aria-valuetext") != value
        cell.screenshot(path=str(shots / name.replace(".ipynb", "-after-slider.png")))
    if name.startswith("04"):  # the process menu relaunches a short run and redraws the timeline
        cell = _cell(page, "local_sgd_explorer(")
        before = _output_images(cell)
        cell.locator("select").first.select_option("3")
        _wait_for_new_figure(cell, before, timeout_s=180)
        measured = re.escape(_("K = {k}, {processes} processes: measured just now.")).replace(
            r"\{k\}", r"\d+"
        )
        status = cell.locator(".widget-label", has_text=re.compile(measured.replace(r"\{processes\}", "3")))
        status.wait_for(timeout=60_000)  # the status says the menu's 3 processes were measured
        cell.screenshot(path=str(shots / name.replace(".ipynb", "-after-widget.png")))
    # the H slider relaunches a DiLoCo run and redraws its loss against data parallel's
    if name.startswith("05"):
        cell = _cell(page, "diloco_explorer(")
        before = _output_images(cell)
        handle = cell.locator(".noUi-handle").first
        handle.focus()
        page.keyboard.press("ArrowLeft")
        _wait_for_new_figure(cell, before, timeout_s=180)
        measured = re.escape(_("H = {h}, outer lr {lr:g}: measured just now.")).replace(r"\{h\}", r"\d+")
        status = cell.locator(".widget-label", has_text=re.compile(measured.replace(r"\{lr:g\}", r"[\d.,]+")))
        status.wait_for(timeout=60_000)
        cell.screenshot(path=str(shots / name.replace(".ipynb", "-after-widget.png")))
    if name.startswith("06"):  # the GPU menu redraws the planner's bars at once, and the verdict follows it
        cell = _cell(page, "plan_explorer(")
        before = _output_images(cell)
        cell.locator("select").nth(1).select_option("A100-80GB")
        _wait_for_new_figure(cell, before, timeout_s=30)
        fits = re.escape(_("{gpu}: fits ({used}); the largest micro-batch that fits is {largest}."))
        fits = (
            fits.replace(r"\{gpu\}", "A100-80GB").replace(r"\{used\}", ".+").replace(r"\{largest\}", r"\d+")
        )
        cell.locator(".widget-label", has_text=re.compile(fits)).wait_for(timeout=30_000)
        cell.screenshot(path=str(shots / name.replace(".ipynb", "-after-widget.png")))
    _answer_the_quiz(page, name, _, shots)
    lab.shut_down_kernels()


def _answer_the_quiz(page, name: str, _, shots: Path) -> None:
    """Every lesson has a quiz: a wrong choice says "Not quite", the right one says "Right." and why
    (in the edition's language: `_` translates)."""
    cell = (
        page.locator(".jp-NotebookPanel:visible .jp-CodeCell")
        .filter(has=page.locator(".widget-radio-box"))
        .first
    )
    question = cell.locator(".widget-vbox .widget-vbox").first
    choices = question.locator(".widget-radio-box label")
    assert choices.count() >= 2, f"{name}: the quiz shows no choices"
    feedback = question.locator(".widget-html").last
    for index in range(choices.count()):
        _check_choice(page, question, choices.nth(index), feedback, chr(ord("a") + index), _)
        if _("Right.") in feedback.text_content():
            break
        assert _("Not quite: try another answer.") in feedback.text_content(), feedback.text_content()
    else:
        raise AssertionError(f"{name}: no choice of the quiz's first question was right")
    cell.screenshot(path=str(shots / name.replace(".ipynb", "-quiz.png")))


def _check_choice(page, question, choice, feedback, letter: str, _) -> None:
    """Pick `choice`, press Check and wait for the feedback on that letter. The kernel answers the
    click; on a busy machine a click can reach it before the choice does, so Check is pressed again
    (it only rewrites the feedback) until the feedback names the letter, for up to a minute."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    choice.click()
    radio = choice.locator("input")
    for _attempt in range(3):
        if not radio.is_checked():
            choice.click()
        question.get_by_role("button", name=_("Check")).click()
        try:
            page.wait_for_function(
                "([element, letter]) => element.textContent.trim().startsWith(letter + ')')",
                arg=[feedback.element_handle(), letter],
                timeout=20_000,
            )
            return
        except PlaywrightTimeout:
            continue
    raise AssertionError(f"choice {letter}) got no feedback in 60 s; it reads {feedback.text_content()!r}")


def test_a_lesson_that_raises_fails(lab, page):
    """The check above catches a lesson that raises: a copy of lesson 00 with one broken cell fails it."""
    source = json.loads((NOTEBOOKS / LESSONS[0]).read_text())
    broken = copy.deepcopy(source)
    code_at = [i for i, cell in enumerate(broken["cells"]) if cell["cell_type"] == "code"]
    middle = code_at[len(code_at) // 2]
    broken["cells"].insert(
        middle,
        {
            "cell_type": "code",
            "id": "deliberately-broken",
            "metadata": {},
            "execution_count": None,
            "outputs": [],
            "source": ["raise RuntimeError('deliberately broken for the browser test')"],
        },
    )
    (lab.folder / "broken_copy.ipynb").write_text(json.dumps(broken))
    try:
        with pytest.raises(AssertionError) as failure:
            check_lesson(page, lab, "broken_copy.ipynb")
    finally:
        lab.shut_down_kernels()
        (lab.folder / "broken_copy.ipynb").unlink()
    message = str(failure.value)
    assert "RuntimeError: deliberately broken for the browser test" in message
    assert "code cells ran" in message  # Run All stopped at the error, as it does for a learner
