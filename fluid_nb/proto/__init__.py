"""Paddle's ProgramDesc wire format: ``framework.proto``, its message classes, one codec."""
