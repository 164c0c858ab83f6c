/* The smallest program a user builds against an installed tenure (bindings/c/run-tests.sh
 * builds it with CMake's find_package(tenure)): the library answers, statuses have names. */
#include <stdio.h>
#include <string.h>

#include "tenure.h"

int main(void) {
    if (strcmp(tenure_status_name(TENURE_ERR_CONDITION_NOT_MET), "ConditionNotMet") != 0) {
        return 1;
    }
    printf("tenure %s (ABI %d)\n", tenure_version(), TENURE_ABI_VERSION);
    return 0;
}
