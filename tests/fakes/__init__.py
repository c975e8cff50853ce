"""Test-only fakes (loopback servers and stand-ins); the course's own emulator lives in mtrl_course."""
