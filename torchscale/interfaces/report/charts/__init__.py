"""The chart model (layer 4, report): every decision about how a report chart looks, made once
for both back-ends.

A `Chart` in the report model says what to show (series of raw values, axis labels, value
formats). `limits.cap_chart` trims it to what a reader can take in (at most 12 series, 40
categories), at build time, so the JSON and terminal reports hold the same chart as the
pictures. `plot.plot` then decides how it looks: series order, one colour, marker, dash and
hatch per series (`palette`), axis ranges, ticks and their labels, whether an axis starts at
zero (`axes`), legend entries and columns, and the heatmap's colour range. The interactive
back-end (plotly, `render/plotly_charts.py`) and the static one (SVG text, `render/svg_direct.py`:
the HTML's and the PDF's) only draw a `Plot`: they never choose a colour or a range, so the same
chart reads the same in every format.
"""
