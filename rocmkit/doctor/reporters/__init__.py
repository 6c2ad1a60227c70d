"""Doctor report writers: a human table (text), JSON, JUnit XML and Prometheus textfile."""
