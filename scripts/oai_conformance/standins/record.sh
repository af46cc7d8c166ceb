# Sourced by every stand-in: one line per call in the sandbox's call log (never a secret: the
# charm passes none on a command line).
mkdir -p /var/log/oai-standin
printf '%s\t%s\t%s\n' "$(basename "$0")" "$PWD" "$*" >> /var/log/oai-standin/calls.log
