/* schedcoordctl: see sc_ctl.h. */
#include "sc_ctl.h"

#include <stdio.h>

int main(int argc, char **argv)
{
    return sc_ctl_main(argc, argv, stdout, stderr);
}
