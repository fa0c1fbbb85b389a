// The one translation unit that compiles Asio and Beast (BOOST_ASIO_SEPARATE_COMPILATION), so
// each file that uses them only pays for declarations.
#include <boost/asio/impl/src.hpp>
#include <boost/beast/src.hpp>
