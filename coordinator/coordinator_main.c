/* schedcoord-coordinator: see sc_coord.h. */
#include "sc_coord.h"

int main(int argc, char **argv)
{
    return sc_coord_main(argc, argv);
}
