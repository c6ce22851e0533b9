#include "overlap/io/exporters.hpp"
