#include <stdio.h>

#include "tpsim/cli.h"

int main(int argc, char **argv)
{
	return tps_cli_main(argc, argv, stdout, stderr);
}
