//! Transport for Atlas collections over OpenDAL (in progress).
