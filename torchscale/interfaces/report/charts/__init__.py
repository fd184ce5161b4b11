"""The chart model: every decision about how a report chart looks, made once for both back-ends
(`limits` caps what a chart draws at build time, `plot` decides how it looks; the plotly and
SVG back-ends only draw a `Plot`), so the same chart reads the same in every format."""
