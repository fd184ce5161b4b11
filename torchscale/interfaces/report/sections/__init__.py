"""The report's sections, one module each (`build(ctx) -> Section`), over the shared `Context`
(`sections.context`) and findings (`sections.findings`)."""
