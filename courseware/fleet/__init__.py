"""The fleet of grading workers: who is up, on what device, grading what.

Each Celery worker process registers itself in the database when it starts and beats a
heartbeat from a thread; a worker silent for FLEET_GONE_AFTER_S is gone, and the work it held
is reclaimed (recovery.py). Instructors see the fleet and the queues on /instructor/fleet/.
"""
