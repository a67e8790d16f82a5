// replaced when rewrite/ gains its first sources
