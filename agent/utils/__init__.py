"""Small helpers with no dependencies on the rest of the package."""
