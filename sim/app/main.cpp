#include <iostream>

int main(int argc, char** argv) {
  std::cout << "kvsim\n";
  return 0;
}
