"""Measurement: the bench runner, calibration of the machine profile and the validation suite
that compares the cost model with measured stage times."""
