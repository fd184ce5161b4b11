"""`torchscale report`'s progress on stderr: the bar of a report's long work, and its lines."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape

from torchscale.interfaces.console.streams import Verbosity, eta_bar, stderr

if TYPE_CHECKING:
    from rich.progress import TaskID

    from torchscale.interfaces.report.progress import Step


class ReportProgress:
    """Where a report's long work stands, on stderr (docs/reporting.md, after the options): a
    bar on a terminal; with `lines` (a PDF, the slow format) a line per step and, where no bar
    is drawn, per quarter of the charts. Nothing with --quiet."""

    def __init__(self, lines: bool) -> None:
        from rich.progress import TextColumn

        from torchscale.interfaces.console.progress import StepProgress

        self.quiet = Verbosity.quiet()
        self.lines = lines and not self.quiet
        self.state = StepProgress()
        self.bar = eta_bar(stderr, self.quiet, TextColumn("{task.completed}/{task.total}"))
        self.task: TaskID | None = None
        self.started = False
        self.quarter = 0

    def step(self, step: Step) -> None:
        from torchscale.interfaces.console.progress import STAGE_WORDS, eta_text

        if self.quiet:
            return
        if self.state.update(step):
            if not self.started:
                self.bar.start()
                self.started = True
            if self.task is not None:
                self.bar.remove_task(self.task)
            words = STAGE_WORDS.get(step.stage, step.stage)
            self.task = self.bar.add_task(words, total=max(1, step.total), eta="")
            self.quarter = 0
            if self.lines:
                self._say(self.state.text())
        assert self.task is not None
        self.bar.update(self.task, completed=step.done, eta=eta_text(self.state.eta()))
        quarter = 4 * step.done // step.total if step.total > 1 else 0
        if self.lines and not stderr.is_terminal and quarter > 0 and quarter > self.quarter:
            self.quarter = quarter
            if step.done < step.total:
                self._say(self.state.text())

    def _say(self, text: str) -> None:
        self.bar.console.print(f"> [REPORT] {escape(text)}", soft_wrap=False, highlight=False)

    def stop(self) -> None:
        if self.started:
            self.bar.stop()
            self.started = False
