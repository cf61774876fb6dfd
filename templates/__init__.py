"""Jinja2 templates of a generated build, shipped as package data (spiralpir.templates)."""
