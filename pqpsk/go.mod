module vpnaas.invalid/pqpsk

go 1.24
