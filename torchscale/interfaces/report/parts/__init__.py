"""What the report's sections are built from and share, building no section of their own: the
`Context` (`parts.context`), the tables several sections read (`parts.tables`), the findings
(`parts.findings`), a run's diagnosis as blocks, the headline and its verdict, the best
configuration, the baseline comparison in few words, and the plain words of headings."""
