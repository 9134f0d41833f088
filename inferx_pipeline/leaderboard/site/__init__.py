"""The static leaderboard site: Jinja2 templates, plotly trace data, downloads, and the writer."""
