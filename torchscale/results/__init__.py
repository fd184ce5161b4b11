"""Result files: the versioned schema, atomic storage, and the summary table."""
