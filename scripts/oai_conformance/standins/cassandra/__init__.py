"""Stand-in for the DataStax Python driver that OAI's provisioning scripts import: a Cassandra
that accepts every statement and records only how many it got (the statements hold keys)."""
