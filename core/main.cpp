#include "core/app.hpp"

int main(int argc, char** argv) { return mpscheck::run_mpscheck(argc, argv); }
