"""The report's sections, one module each (`build(ctx) -> Section`), over the shared `Context`
(`parts.context`) and findings (`parts.findings`)."""
