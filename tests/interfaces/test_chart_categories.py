"""A chart capped by category keeps some of every model (the first of each in turn, in the
table's order) and says so in its title; a chart whose categories are one model's keeps the
first ones. Charts whose series left out a layout name it in the text formats too."""

from __future__ import annotations

from torchscale.interfaces.report.charts.data import category_models
from torchscale.interfaces.report.charts.limits import MAX_CATEGORIES, cap_chart
from torchscale.interfaces.report.model import Chart, Series


def chart(models: int, per_model: int) -> Chart:
    labels = [f"model-{m} b{b}" for m in range(models) for b in range(per_model)]
    return Chart(
        id="c",
        title="Throughput by layout",
        kind="stacked_bar",
        x_label="cell",
        y_label="samples/s",
        series=[Series(name="ddp", x=list(labels), y=[1.0] * len(labels))],
        category_models=category_models((x, x.split(" ")[0]) for x in labels),
    )


def test_every_model_keeps_categories_when_capped() -> None:
    capped = cap_chart(chart(models=5, per_model=100))
    kept = capped.series[0].x
    assert len(kept) == MAX_CATEGORIES
    assert {str(x).split(" ")[0] for x in kept} == {f"model-{m}" for m in range(5)}
    assert kept[:2] == ["model-0 b0", "model-0 b1"]  # the table's order within a model
    assert capped.title.endswith(f"{MAX_CATEGORIES} of 500 shown: the first 8 of each model")
    assert set(capped.category_models) == set(kept)


def test_uneven_models_share_what_is_left() -> None:
    base = chart(models=2, per_model=1)
    labels = ["model-0 b0", *[f"model-1 b{b}" for b in range(60)]]
    uneven = base.model_copy(
        update={
            "series": [Series(name="ddp", x=labels, y=[1.0] * len(labels))],
            "category_models": category_models((x, x.split(" ")[0]) for x in labels),
        }
    )
    capped = cap_chart(uneven)
    assert "model-0 b0" in capped.series[0].x and len(capped.series[0].x) == MAX_CATEGORIES
    assert capped.title.endswith("the first 1-39 of each model")


def test_more_models_than_room_says_how_many_appear() -> None:
    capped = cap_chart(chart(models=50, per_model=2))
    assert capped.title.endswith(f"the first 1 of {MAX_CATEGORIES} of 50 models")


def test_one_model_keeps_the_first_categories() -> None:
    single = chart(models=1, per_model=100)
    assert single.category_models == {}  # one model: nothing to balance
    capped = cap_chart(single)
    assert capped.series[0].x == [f"model-0 b{b}" for b in range(MAX_CATEGORIES)]
    assert capped.title.endswith("first 40 of 100 shown, in the table's order")


def test_a_series_left_out_is_named_where_the_chart_is_not_drawn() -> None:
    """Markdown and the terminal name a chart without drawing it: its absent series go with
    the name ('fsdp: not split'), as the HTML and PDF say them in the chart."""
    from torchscale.interfaces.console import report_full
    from torchscale.interfaces.report.model import Report, Section
    from torchscale.interfaces.report.render import markdown

    drawn = chart(models=1, per_model=2).model_copy(update={"absent": ["fsdp: not split"]})
    report = Report(
        torchscale_version="0",
        title="t",
        generated_at="2026-01-01T00:00:00Z",
        sources=[],
        sections=[Section(id="strategies", title="Strategies", blocks=[drawn])],
    )
    assert drawn.absent_text() == "not drawn: fsdp: not split"
    for text in (
        markdown.render(report, full=True).decode("utf-8"),
        report_full.render(report).decode("utf-8"),
    ):
        assert "not drawn: fsdp: not split" in text, text
