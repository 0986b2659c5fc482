"""The pytest plugin: registered through the pytest11 entry point.

It must not import TensorFlow: every pytest run in the environment imports it.
"""
