"""Offline stand-ins for the managed pieces, so the course runs on a laptop with no AWS account.

Each module replaces one thing the live path gets from a service, behind the same interface the
agent code already uses: `solver_model` (the reference solver as a Strands model provider) and
`transcript` (reading a conversation back into clues) come first; later modules add the Job
Runtime emulator and the stand-in policy. Nothing here is imported by `wordle_agent`.
"""
