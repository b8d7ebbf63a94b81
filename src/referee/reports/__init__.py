"""Renderers: terminal, JSON, HTML, Markdown, JUnit. They compute nothing; they show result rows."""
