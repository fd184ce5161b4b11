"""The report's file renderers: one module per format (HTML, PDF, Markdown, JSON), each taking
the finished `Report` and returning the file's bytes. Renderers format and lay out; they
compute nothing. The terminal's is `console/report_term.py`; `api/report_generate.py` lists the
formats and imports the one asked for on demand.
"""
