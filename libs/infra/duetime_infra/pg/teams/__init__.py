"""Teams: their records, tokens and quotas."""
