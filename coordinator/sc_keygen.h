/* sc_keygen: the `schedcoordctl keygen` command — argument parsing, the key file and the
 * keyring line printed. The key functions themselves are proto/sc_curve's. */
#ifndef SC_KEYGEN_H
#define SC_KEYGEN_H

/* `schedcoordctl keygen [--name NAME] [--out DIR] [--force]`: makes a key pair, writes it to
 * DIR/NAME.key (mode 0600; DIR defaults to ".", NAME to the host name; --force overwrites)
 * and prints the keyring line "NAME PUBLIC_Z85" on stdout. argv[0] is "keygen". Prints its
 * errors on stderr (it is a command, not library code). Returns the exit status (0, 1 on
 * error, 2 on bad usage). */
int sc_keygen_main(int argc, char **argv);

#endif
