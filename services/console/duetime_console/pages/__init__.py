"""The console's pages, one module per part of the site; each exports its ``routes``."""
