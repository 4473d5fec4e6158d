"""Reservations: the rules a request must satisfy and the service the API calls."""
