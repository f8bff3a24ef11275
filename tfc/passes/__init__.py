"""IR passes, one module per pass; pipeline.py chains them."""
